package chip

import (
	"sync/atomic"

	"github.com/neuronfs/neuronfs/chip/mmio"
	"github.com/neuronfs/neuronfs/chip/nq"
	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/dhal"
)

// An engine's start registers in BAR0 (docs/isa.md, "Starting an engine
// by register"). Each NX sequencer has a local register window: START_CTRL
// at +0x004 and the program's start address at +0x1060 (low word) and
// +0x1080 (high word) (wiki 59725913131). Writing START_CTRL with bit 0
// set starts the engine on the program at the start address; writing it 0
// (the run-stall release of bring-up) starts nothing. START_CTRL reads bit
// 0 set while the engine runs and clear once it stopped. A TOP_SP has the
// same registers in its local window at +0x60000, and its tsync doorbell
// (+0x1560 <- 1, wiki 59687844416) starts its program too. Which of these
// the hardware does exactly is guessed; every other offset of the windows
// stays a plain register.
const (
	nxStartCtrl   = 0x004
	nxStartAddrLo = 0x1060
	nxStartAddrHi = 0x1080
	nxRegsSize    = 0x2000 // the part of a local window these registers claim

	nxStartBit   = 1 << 0 // START_CTRL: start (write), running (read)
	topSPLocal   = 0x60000
	topSPTsync   = 0x1560
	tsyncRingBit = 1 << 0
)

// engineLocalWindow is engine e's local register window inside its core's
// TPB window: the sequencer apertures of wiki 59725913131 without their
// mesh prefix (PE, ACT, POOL, DVE); SP's is the TOP_SP-host-visible slot of
// the same table (guessed).
func engineLocalWindow(a dhal.Arch, e seq.Engine) uint64 {
	pool := uint64(0x3000000)
	if a == dhal.V2 {
		pool = 0x2900000
	}
	return [seq.NumEngines]uint64{0x2600000, 0x2400000, pool, 0x2B00000, 0x2800000}[e]
}

// startRegs are one sequencer's start address and START_CTRL.
type startRegs struct {
	lo, hi atomic.Uint32
	start  func(addr uint64) bool // starts the engine; false if it did not
	busy   func() bool
}

func (s *startRegs) addr() uint64 { return uint64(s.hi.Load())<<32 | uint64(s.lo.Load()) }

func (s *startRegs) Read32(off uint64) (uint32, bool) {
	switch off {
	case nxStartAddrLo:
		return s.lo.Load(), true
	case nxStartAddrHi:
		return s.hi.Load(), true
	case nxStartCtrl:
		if s.busy() {
			return nxStartBit, true
		}
		return 0, true
	}
	return 0, false
}

func (s *startRegs) Write32(off uint64, v uint32) bool {
	switch off {
	case nxStartAddrLo:
		s.lo.Store(v)
	case nxStartAddrHi:
		s.hi.Store(v)
	case nxStartCtrl:
		if v&nxStartBit != 0 {
			s.start(s.addr())
		}
	default:
		return false
	}
	return true
}

// topSPRegs is a TOP_SP's local window: its start registers and its tsync
// doorbell.
type topSPRegs struct{ startRegs }

func (t *topSPRegs) Write32(off uint64, v uint32) bool {
	if off == topSPTsync {
		if v&tsyncRingBit != 0 {
			t.start(t.addr())
		}
		return false // the doorbell's word stays readable as written
	}
	return t.startRegs.Write32(off, v)
}

// engineRegions are the start registers of every core's engines and of
// every TOP_SP, as BAR0 regions.
func (c *Chip) engineRegions() []mmio.Region {
	f := c.arch
	var out []mmio.Region
	for _, core := range c.cores {
		for e := range seq.Engine(seq.NumEngines) {
			regs := &startRegs{
				start: func(addr uint64) bool {
					return core.startByRegister(int(e), e, addr, func(n seq.Notification) {
						emitNotification(core.notific, dhal.InferStatusSlot+int(n.Engine), n)
					})
				},
				busy: func() bool { return core.engineBusy(e) },
			}
			out = append(out, mmio.Region{Name: "engine-start", Base: f.TPBBase(core.nc) + engineLocalWindow(f.Arch, e), Size: nxRegsSize, Block: regs})
		}
	}
	per := max(1, f.TopSPsPerDevice/max(1, len(c.cores)))
	for ts := range f.TopSPsPerDevice {
		core := c.cores[min(ts/per, len(c.cores)-1)]
		slot := regSlotTopSP(ts % per)
		block := c.topSPNQ[ts]
		regs := &topSPRegs{startRegs{
			start: func(addr uint64) bool {
				return core.startByRegister(slot, seq.SP, addr, func(n seq.Notification) { topSPNotify(block, n) })
			},
			busy: func() bool { return core.regRunning(slot) },
		}}
		out = append(out, mmio.Region{Name: "topsp-start", Base: f.TopSPWindow(ts) + topSPLocal, Size: nxRegsSize, Block: regs})
	}
	return out
}

// topSPNotify writes a TOP_SP program's notification into the TOP_SP's
// NOTIFIC block: records into the queue a core's SP engine would use,
// faults into its ERROR queue (guessed).
func topSPNotify(b *nq.Block, n seq.Notification) {
	emitNotification(b, dhal.InferStatusSlot+int(seq.SP), n)
}
