package chip

import (
	"encoding/binary"
	"sort"
	"testing"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/dhal"
)

// The UDMA blocks as DMA destinations overlap no semaphore area (the
// space's effect windows must not overlap), and a copy into a queue's
// tail-increment register is an increment that marks the queue as fed by
// increments; a copy into another register of the block moves nothing.
func TestTriggerCopyIncrementsTail(t *testing.T) {
	for _, inst := range []string{"trn1.2xlarge", "trn2.48xlarge", "trn3.48xlarge"} {
		t.Run(inst, func(t *testing.T) {
			c := newTestChip(t, inst)
			es := append(c.semEffects(), c.udmaEffects()...)
			sort.Slice(es, func(i, j int) bool { return es[i].Base < es[j].Base })
			for i := 1; i < len(es); i++ {
				if es[i-1].Base+es[i-1].Size > es[i].Base {
					t.Fatalf("effect windows overlap: %#x+%#x and %#x", es[i-1].Base, es[i-1].Size, es[i].Base)
				}
			}
			f := c.arch
			const eng, qid = 2, 3
			base := c.arch.HBMBases[0] + 1<<20
			if errno := c.Engine(eng).InitQueue(qid, dma.RingSpec{Base: base, Size: 32}, dma.RingSpec{Base: base + 0x1000, Size: 32}); errno != 0 {
				t.Fatal(errno)
			}
			reg := f.CSRBase() + f.UDMABase(eng) + dhal.UDMAM2SQueues + qid*dhal.UDMAQueueStride
			var v [4]byte
			binary.LittleEndian.PutUint32(v[:], 3)
			if !c.mem.Write(reg+dhal.UDMAQueueTailInc-4, v[:]) { // the register before: ignored
				t.Fatal("a copy into the UDMA block was refused")
			}
			if st := c.Engine(eng).QueueState(qid, dma.TX); st.Tail != 0 || c.roles.isFed(eng, qid) {
				t.Fatalf("a copy beside the tail increment moved the tail: %+v", st)
			}
			if !c.mem.Write(reg+dhal.UDMAQueueTailInc, v[:]) {
				t.Fatal("the trigger copy was refused")
			}
			if st := c.Engine(eng).QueueState(qid, dma.TX); st.Tail != 3 || !c.roles.isFed(eng, qid) {
				t.Errorf("after the trigger copy: tail %d, fed %v; want 3 and fed", st.Tail, c.roles.isFed(eng, qid))
			}
			c.Core(0).ResetEngines()
			if c.roles.isFed(eng, qid) {
				t.Error("a core reset kept the queue's role")
			}
		})
	}
}
