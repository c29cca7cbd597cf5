package chip

import (
	"encoding/binary"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/chip/mmio"
	"github.com/neuronfs/neuronfs/chip/nq"
	"github.com/neuronfs/neuronfs/dhal"
)

// firmwareAPIVersion is what the emulated firmware reports at misc-RAM 0:
// new enough for the register protocol (power profiles).
const firmwareAPIVersion = 8

// engineBlock shows a DMA engine's registers in BAR0.
type engineBlock struct{ e *dma.Engine }

func (b engineBlock) Read32(off uint64) (uint32, bool)  { return b.e.ReadRegister(off) }
func (b engineBlock) Write32(off uint64, v uint32) bool { return b.e.WriteRegister(off, v) }

// semBlock is a core's event and semaphore area in its TPB window: reads
// see the values, writes to the set, increment and decrement windows do
// what the hardware does.
type semBlock struct{ c *Core }

func (b semBlock) Read32(off uint64) (uint32, bool) {
	b.c.Sweep()
	a, ok := b.c.Area()
	if !ok {
		return 0, false
	}
	return a.Read32(off)
}

func (b semBlock) Write32(off uint64, v uint32) bool {
	if off >= AreaSize || off%4 != 0 {
		return false
	}
	b.c.Apply(off, OpAt(off), v)
	return true
}

// initBAR0 assembles BAR0: the firmware's misc RAM, the engines' UDMA
// blocks, the cores' semaphore windows and the NOTIFIC blocks.
func (c *Chip) initBAR0() error {
	f := c.arch
	mem := c.mem
	fw := mmio.NewFirmware(firmwareAPIVersion, f.MiscRAMDevice, mem, func(addr uint64) (uint32, bool) {
		b, ok := mem.Slice(addr, 4)
		if !ok || addr%4 != 0 {
			return 0, false
		}
		return binary.LittleEndian.Uint32(b), true
	})
	faults := c.drv.Faults()
	fw.ResetBehaviour(c.cfg.ResetLatency, faults.ResetFail)
	fw.FailRequests(faults.FWIOFail)
	for off, v := range c.cfg.Identity {
		fw.Set(off, v)
	}
	regions := []mmio.Region{{Name: "misc-ram", Base: f.MiscRAMBar0, Size: mmio.MiscRAMSize, Block: fw}}
	for i, e := range c.engines {
		regions = append(regions, mmio.Region{Name: "udma", Base: f.UDMABase(i), Size: dhal.UDMABlockSize, Block: engineBlock{e}})
	}
	for _, core := range c.cores {
		regions = append(regions, mmio.Region{Name: "semaphores", Base: f.TPBBase(core.nc) + dhal.TPBEventsOffset, Size: AreaSize, Block: semBlock{core}})
	}
	for _, core := range c.cores {
		regions = append(regions, mmio.Region{Name: "notific", Base: f.NotificationBlock(core.nc), Size: nq.BlockSize, Block: core.notific})
	}
	for ts := range f.TopSPsPerDevice {
		b := nq.NewBlock(mem, c.cfg.Epoch)
		c.topSPNQ = append(c.topSPNQ, b)
		regions = append(regions, mmio.Region{Name: "topsp-notific", Base: f.TopSPNotificationBlock(ts), Size: nq.BlockSize, Block: b})
	}
	regions = append(regions, c.engineRegions()...)
	bar, err := mmio.NewBAR(f.BAR0Size, regions, c.tpbMemory()...)
	if err != nil {
		return err
	}
	c.bar, c.fw = bar, fw
	return nil
}
