package device

import (
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/chip/mmio"
	"github.com/neuronfs/neuronfs/dhal"
)

// Faults the emulator injects on demand, each surfacing where the driver
// would surface the real failure. They can be switched while the daemon
// runs (the neuronfs/faults control file, or --inject at start).
type Faults struct {
	// ResetFail: the firmware never finishes a reset; the driver's wait
	// runs out, NC_RESET_READY reports failure, reset_fail_count rises
	// (and a probe or sysfs reset leaves the device invalid).
	ResetFail atomic.Bool
	// DMAAbort: every DMA queue aborts at its next descriptor with a read
	// error (queue and engine state, an ERROR record, hw_dma_abort_error).
	DMAAbort atomic.Bool
	// DMAStall: DMA queues stop moving; completion markers and staged
	// exec DMA never finish (the runtime's wait times out).
	DMAStall atomic.Bool
	// AllocFail: every memory allocation fails with ENOMEM at the
	// driver's fault point.
	AllocFail atomic.Bool
	// FWIOFail: the firmware answers every mailbox request with a
	// failure (READ_HW_COUNTERS, POST_METRIC, POWER_PROFILE answer -1).
	FWIOFail atomic.Bool
	// PowerInvalid: the firmware publishes power samples beyond 100%,
	// which the driver drops, so every minute rolls up as NO_DATA.
	PowerInvalid atomic.Bool
	// aimed are the aimed faults armed (callfault.go), sorted by
	// command; replaced whole, never changed in place.
	aimed atomic.Pointer[[]*armedCall]
	// rejected is the control file's line about the last write it
	// refused, until a write is accepted.
	rejected atomic.Pointer[string]
	// sys is the host whose devices' firmware and engines the faults
	// reach (ECC counts, HBM repair, a kick after a cleared stall).
	sys *System
}

// faultSwitches names the on/off faults for parsing and printing.
func (f *Faults) switches() map[string]*atomic.Bool {
	return map[string]*atomic.Bool{
		"reset-fail": &f.ResetFail, "dma-abort": &f.DMAAbort, "dma-stall": &f.DMAStall,
		"alloc-fail": &f.AllocFail, "fwio-fail": &f.FWIOFail, "power-invalid": &f.PowerInvalid,
	}
}

// Faults returns the system's fault switches.
func (s *System) Faults() *Faults { return &s.faults }

// Apply parses a comma-separated fault list (see parseFaults) and applies
// it. A list with a mistake changes nothing.
func (f *Faults) Apply(spec string) error {
	items, err := parseFaults(spec)
	if err != nil {
		return err
	}
	sw := f.switches()
	for _, it := range items {
		switch it.name {
		case "none":
			for _, b := range sw {
				b.Store(false)
			}
			for _, name := range []string{faultECCSRAM, faultECCHBM, faultHBMRepair} {
				f.setFirmware(name, 0)
			}
			f.clearAimed()
		case faultCall:
			f.setAimed(it.aim, it.val != 0)
		case faultECCSRAM, faultECCHBM, faultHBMRepair:
			f.setFirmware(it.name, it.val)
		default:
			sw[it.name].Store(it.val != 0)
		}
	}
	for _, d := range f.sys.Devices {
		d.chip.KickEngines() // a cleared stall lets queued work go on
	}
	return nil
}

// setFirmware sets an ECC count or the HBM repair state on every device.
func (f *Faults) setFirmware(name string, v uint32) {
	for _, d := range f.sys.Devices {
		switch name {
		case faultHBMRepair:
			d.chip.Firmware().Set(mmio.RegHBMRepairState, v)
		case faultECCSRAM, faultECCHBM:
			r := uint64(mmio.RegECCSRAM)
			if name == faultECCHBM {
				r = mmio.RegECCHBM0 // counted on stack 0
			}
			cur, _ := d.chip.Firmware().Read32(r)
			d.chip.Firmware().Set(r, cur&0xffff0000|v)
		}
	}
}

// status renders FaultsFile: the faults that are on, the ECC readings of
// device 0, and why the last write was rejected.
func (f *Faults) status() string {
	var on []string
	sw := f.switches()
	for _, n := range switchNames() {
		if sw[n].Load() {
			on = append(on, n)
		}
	}
	if len(f.sys.Devices) > 0 {
		fw := f.sys.Devices[0].chip.Firmware()
		sram, _ := fw.Read32(mmio.RegECCSRAM)
		hbm, _ := fw.Read32(mmio.RegECCHBM0)
		if sram&0xffff != 0 {
			on = append(on, fmt.Sprintf("ecc-sram=%d", sram&0xffff))
		}
		if hbm&0xffff != 0 {
			on = append(on, fmt.Sprintf("ecc-hbm=%d", hbm&0xffff))
		}
		if st, _ := fw.Read32(mmio.RegHBMRepairState); st != 0 {
			for name, v := range hbmRepairStates {
				if v == st {
					on = append(on, faultHBMRepair+"="+name)
				}
			}
		}
	}
	on = append(on, f.aimedStatus()...)
	status := "none\n"
	if len(on) > 0 {
		status = strings.Join(on, ",") + "\n"
	}
	// The writer of a rejected list got only EINVAL; the reason is here.
	if r := f.rejected.Load(); r != nil {
		status += *r + "\n"
	}
	return status
}

// attr is FaultsFile, which shows the faults and takes fault lists.
func (f *Faults) attr() Attr {
	return Attr{
		Path: FaultsFile, Mode: 0o600,
		Show: f.status,
		Store: func(data []byte) syscall.Errno {
			spec := strings.TrimSpace(string(data))
			if err := f.Apply(spec); err != nil {
				f.sys.log.WithError(err).Warn("faults: bad request")
				line := fmt.Sprintf("# last write rejected: %v", err)
				f.rejected.Store(&line)
				return syscall.EINVAL
			}
			f.rejected.Store(nil)
			return 0
		},
	}
}

// FaultsFile is the control file that takes and shows fault lists.
const FaultsFile = "faults"

// dma is the engines' fault hook.
func (f *Faults) dma() (stall bool, abort uint32) {
	if f.DMAStall.Load() {
		return true, 0
	}
	if f.DMAAbort.Load() {
		return false, dma.StatusReadError
	}
	return false, 0
}

// uncorrectedHBM sums the uncorrected counts of the HBM stacks.
func (d *Device) uncorrectedHBM() uint32 {
	var n uint32
	for k := range d.sys.Arch.HBMChannels {
		v, _ := d.chip.Firmware().Read32(mmio.RegECCHBM0 + 4*uint64(k))
		n += v & 0xffff
	}
	return n
}

// hbmErrorCount is what the driver shows for HBM errors: V2 has no repair,
// V3/V4 split the count by the firmware's repair state (pending: the
// errors are repairable; failed, or none with errors from old firmware:
// they are not).
func (d *Device) hbmErrorCount(repairable bool) uint32 {
	total := d.uncorrectedHBM()
	if d.sys.Arch.Arch == dhal.V2 {
		if repairable {
			return 0
		}
		return total
	}
	state, _ := d.chip.Firmware().Read32(mmio.RegHBMRepairState)
	state &= 3
	if total == 0 && state != 0 {
		return 0 // an inconsistent reading: the driver shows nothing
	}
	if repairable {
		if state == 1 {
			return total
		}
		return 0
	}
	if state == 2 || state == 0 {
		return total
	}
	return 0
}
