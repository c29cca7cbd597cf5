package chip

import (
	"sync/atomic"
	"time"

	"github.com/neuronfs/neuronfs/chip/mmio"
)

// The firmware's half of power utilisation: it turns the chip's activity
// (executions, copies, DMA) into a utilisation per die and publishes it
// in misc RAM with a sample number, where the driver samples it.

const (
	// fullBips is 100% in basis points.
	fullBips = 10000
	// powerInvalidSample is what the firmware publishes under the
	// power-invalid fault: a utilisation beyond 100%.
	powerInvalidSample = 0xffff
	// BusyBytesPerSecond is the copy and DMA rate that counts as a fully
	// busy device in the firmware's model.
	BusyBytesPerSecond = 10 << 30
)

// powerRegs are the misc-RAM registers of the dies' samples: sample
// number in the high half, basis points in the low.
var powerRegs = [...]uint64{mmio.RegPowerUtilDie0, mmio.RegPowerUtilDie1}

// PowerReg is the misc-RAM register of die's power sample.
func PowerReg(die int) uint64 { return powerRegs[die] }

// firmwarePower is the activity since the last sample; busy is added to
// from any goroutine, fwSample belongs to the publishing one.
type firmwarePower struct {
	busy     atomic.Int64 // nanoseconds of activity since the last sample
	fwSample uint16       // the firmware's sample number
}

func (p *firmwarePower) addBusy(d time.Duration) { p.busy.Add(int64(d)) }

func (p *firmwarePower) addBytes(n uint64) {
	p.addBusy(time.Duration(n * uint64(time.Second) / BusyBytesPerSecond))
}

// AddBusy records d of device activity (an execution's share).
func (c *Chip) AddBusy(d time.Duration) { c.power.addBusy(d) }

// AddBytes records a copy or DMA transfer of n bytes.
func (c *Chip) AddBytes(n uint64) { c.power.addBytes(n) }

// PublishPower is the firmware's sample for the last period:
// utilisation is the busy share of the period, the same for every die.
func (c *Chip) PublishPower(period time.Duration) {
	p := &c.power
	busy := p.busy.Swap(0)
	bips := uint32(min(busy*fullBips/int64(period), fullBips))
	if c.drv.Faults().PowerInvalid() {
		bips = powerInvalidSample
	}
	p.fwSample++
	for die := 0; die < c.arch.DiesPerDevice; die++ {
		c.fw.Set(powerRegs[die], uint32(p.fwSample)<<16|bips)
	}
}
