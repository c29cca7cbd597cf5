package device

import (
	"encoding/binary"

	"github.com/neuronfs/neuronfs/chip"
	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/dma"
	"github.com/neuronfs/neuronfs/mmio"
	"github.com/neuronfs/neuronfs/nq"
)

// firmwareAPIVersion is what the emulated firmware reports at misc-RAM 0:
// new enough for the register protocol (power profiles).
const firmwareAPIVersion = 8

// mmioState is the device's BAR0 and the firmware behind it.
type mmioState struct {
	bar *mmio.BAR
	fw  *mmio.Firmware
	fwc *mmio.Client
	// NOTIFIC blocks of the cores and of the TOP_SPs.
	coreNQ, topSPNQ []*nq.Block
}

// engineBlock shows a DMA engine's registers in BAR0.
type engineBlock struct{ e *dma.Engine }

func (b engineBlock) Read32(off uint64) (uint32, bool)  { return b.e.ReadRegister(off) }
func (b engineBlock) Write32(off uint64, v uint32) bool { return b.e.WriteRegister(off, v) }

// semBlock is a core's event and semaphore area in its TPB window: reads
// see the values, writes to the set, increment and decrement windows do
// what the hardware does.
type semBlock struct {
	d  *Device
	nc int
}

func (b semBlock) Read32(off uint64) (uint32, bool) {
	b.d.sweepSemaphores(b.nc)
	a, ok := b.d.semArea(b.nc)
	if !ok {
		return 0, false
	}
	return a.Read32(off)
}

func (b semBlock) Write32(off uint64, v uint32) bool {
	if off >= chip.AreaSize || off%4 != 0 {
		return false
	}
	b.d.applySem(b.nc, off, chip.OpAt(off), v)
	return true
}

func (d *Device) initMMIO() error {
	f := d.sys.Arch
	mem := d.dma.mem
	fw := mmio.NewFirmware(firmwareAPIVersion, f.MiscRAMDevice, mem, func(addr uint64) (uint32, bool) {
		b, ok := mem.Slice(addr, 4)
		if !ok || addr%4 != 0 {
			return 0, false
		}
		return binary.LittleEndian.Uint32(b), true
	})
	fw.ResetBehaviour(d.sys.resetLatency, d.sys.faults.ResetFail.Load)
	fw.FailRequests(d.sys.faults.FWIOFail.Load)
	serial := d.sys.serialNumber(d.Index)
	regs := []struct {
		off uint64
		v   uint32
	}{
		{mmio.RegDeviceID, d.sys.Instance.RoutingID(d.Index)},
		{mmio.RegSerialLo, uint32(serial)},
		{mmio.RegSerialHi, uint32(serial >> 32)},
	}
	if d.sys.Instance.Platform == dhal.PlatformPDS {
		// The firmware's server info: valid bit and server id.
		regs = append(regs, struct {
			off uint64
			v   uint32
		}{mmio.RegServerRack, 1<<15 | d.sys.Instance.ServerID&0x7fff})
	}
	for _, r := range regs {
		fw.Set(r.off, r.v)
	}
	d.sys.podRAM[d.Index] = fw
	regions := []mmio.Region{{Name: "misc-ram", Base: f.MiscRAMBar0, Size: mmio.MiscRAMSize, Block: fw}}
	for i, e := range d.dma.engines {
		regions = append(regions, mmio.Region{Name: "udma", Base: f.UDMABase(i), Size: dhal.UDMABlockSize, Block: engineBlock{e}})
	}
	for c := range f.CoresPerDevice {
		regions = append(regions, mmio.Region{Name: "semaphores", Base: f.TPBBase(c) + dhal.TPBEventsOffset, Size: chip.AreaSize, Block: semBlock{d, c}})
	}
	var coreNQ, topSPNQ []*nq.Block
	for c := range f.CoresPerDevice {
		b := nq.NewBlock(mem, d.sys.epoch)
		coreNQ = append(coreNQ, b)
		regions = append(regions, mmio.Region{Name: "notific", Base: f.NotificationBlock(c), Size: nq.BlockSize, Block: b})
	}
	for ts := range f.TopSPsPerDevice {
		b := nq.NewBlock(mem, d.sys.epoch)
		topSPNQ = append(topSPNQ, b)
		regions = append(regions, mmio.Region{Name: "topsp-notific", Base: f.TopSPNotificationBlock(ts), Size: nq.BlockSize, Block: b})
	}
	bar, err := mmio.NewBAR(f.BAR0Size, regions)
	if err != nil {
		return err
	}
	// The driver's two mailbox buffers for the legacy protocol.
	var bufs [2]*mempool.Chunk
	for i := range bufs {
		c, err := d.pool.Alloc(mempool.AllocRequest{Size: mmio.MailboxSize, Host: true, MemType: mempool.MemTypeNcdevHost, Lifespan: mempool.LifespanDevice})
		if err != nil {
			return err
		}
		bufs[i] = c
	}
	d.mmio = mmioState{bar: bar, fw: fw, fwc: mmio.NewClient(bar, f.MiscRAMBar0, mem, bufs[0].PA, bufs[1].PA), coreNQ: coreNQ, topSPNQ: topSPNQ}
	return nil
}

// FirmwareState reports what the device's firmware was told (posted
// metrics, power profile, request counts).
func (d *Device) FirmwareState() mmio.FirmwareState { return d.mmio.fw.State() }
