package chip

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/dhal"
)

// csrQueue is a queue of core nc prepared with two descriptor pairs and
// not started: 64 bytes of data to dst, then a 1 into the increment
// window of semaphore sem (the DMA's completion semaphore).
type csrQueue struct {
	eng       *dma.Engine
	engID     int
	qid       int
	src, dst  []byte
	m2s, s2m  uint64 // device addresses of the tail-increment registers
	completed uint8  // the semaphore the second pair raises
}

func prepareCSRQueue(t *testing.T, c *Chip, nc int, sem uint8) csrQueue {
	t.Helper()
	return prepareCSRQueueFrom(t, c, nc, sem, 0)
}

// prepareCSRQueueFrom is prepareCSRQueue copying from device address
// from (0: a buffer of its own, filled with 1, 2, 3...).
func prepareCSRQueueFrom(t *testing.T, c *Chip, nc int, sem uint8, from uint64) csrQueue {
	t.Helper()
	f := c.arch
	q := csrQueue{engID: nc*f.DMAEnginesPerCore + 3, qid: 2, completed: sem}
	q.eng = c.Engine(q.engID)
	base := f.HBMBases[0] + 4<<20
	const txRing, rxRing, src, dst, one = 0, 0x1000, 0x10000, 0x20000, 0x30000
	slice := func(off, n uint64) []byte {
		b, ok := c.mem.Slice(base+off, n)
		if !ok {
			t.Fatalf("no memory at %#x", base+off)
		}
		return b
	}
	q.src, q.dst = slice(src, 64), slice(dst, 64)
	for i := range q.src {
		q.src[i] = byte(i + 1)
	}
	srcPA := base + src
	if from != 0 {
		srcPA = from
	}
	binary.LittleEndian.PutUint32(slice(one, 4), 1)
	res, ok := f.LookupMmapResource(dhal.BlockTPB, uint32(nc), dhal.ResourceSemaphore)
	if !ok {
		t.Fatal("no semaphore area")
	}
	semInc := res.Offset + ReadWindow + uint64(Inc)*WindowStride + 4*uint64(sem)
	pairs := [][2]dmadesc.Desc{}
	for _, p := range []struct {
		src, dst uint64
		n        uint32
	}{{srcPA, base + dst, 64}, {base + one, semInc, 4}} {
		tx, rx := dmadesc.CopyPair(p.src, p.dst, p.n, dmadesc.InitialRingID)
		pairs = append(pairs, [2]dmadesc.Desc{tx, rx})
	}
	for i, p := range pairs {
		p[0].Put(slice(txRing+uint64(i)*dmadesc.Size, dmadesc.Size))
		p[1].Put(slice(rxRing+uint64(i)*dmadesc.Size, dmadesc.Size))
	}
	if errno := q.eng.InitQueue(q.qid, dma.RingSpec{Base: base + txRing, Size: 32}, dma.RingSpec{Base: base + rxRing, Size: 32}); errno != 0 {
		t.Fatal(errno)
	}
	reg := func(side uint64) uint64 {
		return f.CSRBase() + f.UDMABase(q.engID) + side + uint64(q.qid)*dhal.UDMAQueueStride + dhal.UDMAQueueTailInc
	}
	q.m2s, q.s2m = reg(dhal.UDMAM2SQueues), reg(dhal.UDMAS2MQueues)
	return q
}

func (q csrQueue) untouched(t *testing.T, when string) {
	t.Helper()
	if !bytes.Equal(q.dst, make([]byte, len(q.dst))) {
		t.Fatalf("%s: the destination was written", when)
	}
	if st := q.eng.QueueState(q.qid, dma.TX); st.Head != st.Tail || st.Completed != 0 {
		t.Fatalf("%s: the queue moved (%+v)", when, st)
	}
}

// A program's CTRL_WR to a queue's tail-increment registers starts it:
// nothing moves before, and the copy's write to the completion semaphore
// releases the program's wait after; on V2 and V3.
func TestCSRTailIncrementStartsQueue(t *testing.T) {
	for _, inst := range []string{"trn1.2xlarge", "trn2.3xlarge"} {
		t.Run(inst, func(t *testing.T) {
			c := newTestChip(t, inst)
			const nc, gate, done = 1, 5, 6
			q := prepareCSRQueue(t, c, nc, done)
			r := runEngines(t, c, nc, map[seq.Engine]*seq.Image{
				seq.PE: seq.Assemble(0x1000,
					seq.NewWait(seq.WaitSemGE, gate, 1),
					seq.NewCSRWrite(q.s2m, 2),
					seq.NewCSRWrite(q.m2s, 2),
					seq.NewWait(seq.WaitSemGE, done, 1),
					seq.NewRecord(seq.OpHalt)),
			})
			pe := r.seqs[seq.PE]
			waitUntil(t, "PE waits at its gate", func() bool { s := pe.Status(); return s.State == seq.Waiting && s.PC == 0x1000 })
			q.untouched(t, "before the CTRL_WR")
			c.Core(nc).UpdateSemaphore(gate, seq.SemSet, 1)
			waitUntil(t, "PE halts", func() bool { return pe.Status().State == seq.Halted })
			if !bytes.Equal(q.dst, q.src) {
				t.Errorf("destination % x, want % x", q.dst[:8], q.src[:8])
			}
			if st := q.eng.QueueState(q.qid, dma.RX); st.Completed != 2 {
				t.Errorf("%d RX descriptors completed, want 2", st.Completed)
			}
			if a, _ := c.Core(nc).Area(); a.Semaphore(done) != 1 {
				t.Errorf("completion semaphore %d, want 1", a.Semaphore(done))
			}
		})
	}
}

// Without the CTRL_WR the prepared queue never moves, and a program
// waiting on its completion semaphore hangs the core.
func TestNoCSRWriteNoCopy(t *testing.T) {
	c := newTestChip(t, "trn2.3xlarge")
	const nc, done = 1, 6
	q := prepareCSRQueue(t, c, nc, done)
	runEngines(t, c, nc, map[seq.Engine]*seq.Image{
		seq.PE: seq.Assemble(0x1000, seq.NewWait(seq.WaitSemGE, done, 1), seq.NewRecord(seq.OpHalt)),
	})
	waitUntil(t, "the core blocked", func() bool { _, ok := c.Core(nc).Blocked(); return ok })
	q.untouched(t, "blocked")
}

// A CTRL_WR outside the register space stops only the writing engine,
// with ErrCSR; one to a register the emulation does not model is taken
// and ignored.
func TestCSRWriteOutsideRegisterSpace(t *testing.T) {
	c := newTestChip(t, "trn2.3xlarge")
	f := c.arch
	const nc, gate = 1, 7
	if _, ok := f.CSROffset(0x40); ok {
		t.Fatal("0x40 is register space: the test proves nothing")
	}
	r := runEngines(t, c, nc, map[seq.Engine]*seq.Image{
		seq.PE:   seq.Assemble(0x1000, seq.NewWait(seq.WaitSemGE, gate, 1), seq.NewRecord(seq.OpHalt)),
		seq.ACT:  seq.Assemble(0x2000, seq.NewCSRWrite(0x40, 1), seq.NewRecord(seq.OpHalt)),
		seq.POOL: seq.Assemble(0x3000, seq.NewCSRWrite(f.CSRBase()+f.NotificationBlock(nc)+0x100, 1), seq.NewRecord(seq.OpHalt)),
	})
	act := r.seqs[seq.ACT]
	waitUntil(t, "ACT faulted", func() bool { return act.Status().State == seq.Faulted })
	if flt := act.Status().Fault; flt == nil || !errors.Is(flt.Err, seq.ErrCSR) || flt.PC != 0x2000 {
		t.Errorf("ACT's fault %v, want ErrCSR at 0x2000", flt)
	}
	waitUntil(t, "POOL halts", func() bool { return r.seqs[seq.POOL].Status().State == seq.Halted })
	pe := r.seqs[seq.PE]
	if s := pe.Status(); s.State != seq.Waiting {
		t.Errorf("PE %v after ACT's fault, want waiting", s.State)
	}
	c.Core(nc).UpdateSemaphore(gate, seq.SemSet, 1)
	waitUntil(t, "PE halts", func() bool { return pe.Status().State == seq.Halted })
}
