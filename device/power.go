package device

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/neuronfs/neuronfs/chip"
	"github.com/neuronfs/neuronfs/dhal"
)

// Power utilisation, in two halves as on the hardware. The emulated
// firmware (chip/power.go) turns each device's activity into a
// utilisation per die and publishes it in misc RAM with a sample number;
// the driver samples those registers and rolls the samples up at every
// wall-clock minute into the stats that stats/power/utilization shows.
//
// One goroutine per system does both, once per firmware period: the
// driver samples every 50 ms and drops repeated sample numbers, so
// sampling right after each publication keeps exactly the samples the
// driver would keep.
const (
	// powerPeriod is how often the firmware publishes a sample: twice the
	// rate the driver's 60-sample minimum needs, so a whole minute always
	// has enough.
	powerPeriod = 500 * time.Millisecond
	// powerMinSamples is the driver's minimum for a VALID minute.
	powerMinSamples = 60
	// powerMaxBips is 100% in basis points; the driver drops larger values.
	powerMaxBips = 10000
)

// Power statuses, in the driver's order and spelling. The driver also
// names POWER_STATUS_INVALID but never sets it: a minute without enough
// good samples, whatever the cause, is NO_DATA.
type powerStatus int

const (
	powerValid powerStatus = iota
	powerNoData
)

var powerStatusNames = []string{"POWER_STATUS_VALID", "POWER_STATUS_NO_DATA"}

// powerStats is one minute's roll-up; the driver starts with NO_DATA at
// time 0 until its first sample.
type powerStats struct {
	status   powerStatus
	at       time.Time
	min, max uint16
	avg      uint32
}

func (p powerStats) String() string {
	pct := func(b uint32) string { return fmt.Sprintf("%d.%02d", b/100, b%100) }
	return fmt.Sprintf("%s,%d,%s,%s,%s\n", powerStatusNames[p.status], p.at.Unix(), pct(uint32(p.min)), pct(uint32(p.max)), pct(p.avg))
}

// powerState is one device's driver half. It belongs to the sampling
// goroutine, but stats, which sysfs reads.
type powerState struct {
	d *Device // whose firmware registers it samples
	// The driver's samples of the current minute.
	n          uint32
	total      uint64
	min, max   uint16
	lastSample [2]uint16 // per die, to skip a sample read twice

	stats atomic.Pointer[powerStats]
}

func (p *powerState) init(d *Device) {
	p.d = d
	p.resetSamples()
	p.stats.Store(&powerStats{status: powerNoData, at: time.Unix(0, 0)})
}

func (p *powerState) resetSamples() {
	p.n, p.total, p.min, p.max = 0, 0, powerMaxBips, 0
}

// sample is the driver's sampling step: nothing while the device is
// not ready or on an emulator or QEMU (revision 240/255); else a new
// sample from every die stores the largest utilisation, and crossing a
// minute boundary rolls the minute up.
func (p *powerState) sample(now time.Time) {
	d := p.d
	if d.State() != StateReady || d.sys.Revision == dhal.RevisionEmulator || d.sys.Revision == dhal.RevisionQEMU {
		return
	}
	var util uint16
	var samples [2]uint16
	fresh := true
	for die := 0; die < d.sys.Arch.DiesPerDevice; die++ {
		v, _ := d.chip.Firmware().Read32(chip.PowerReg(die))
		samples[die] = uint16(v >> 16)
		if samples[die] == p.lastSample[die] {
			fresh = false
		} else {
			util = max(util, uint16(v))
		}
	}
	if fresh && util <= powerMaxBips {
		p.n++
		p.total += uint64(util)
		p.min, p.max = min(p.min, util), max(p.max, util)
		p.lastSample = samples
	}
	if now.Unix()/60 == p.stats.Load().at.Unix()/60 {
		return
	}
	st := &powerStats{status: powerNoData, at: now}
	if p.n >= powerMinSamples {
		st.status, st.min, st.max, st.avg = powerValid, p.min, p.max, uint32(p.total/uint64(p.n))
	}
	p.resetSamples()
	p.stats.Store(st)
}

// show renders stats/power/utilization.
func (p *powerState) show() string { return p.stats.Load().String() }
