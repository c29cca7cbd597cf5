package fs_test

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

// ioQueue is a model's IO queue as the runtime leaves it: device-driven
// (initialised, never rung by the host), its descriptors staged batch by
// batch, started only by tail increments.
type ioQueue struct {
	*runtime.Queue
	t              *testing.T
	src, dst       *runtime.Mem
	tailTX, tailRX uint64 // device addresses of its tail-increment registers
}

const ioBatch = 64 // bytes one batch (one descriptor pair) moves

func newIOQueue(t *testing.T, c *progClient, f *dhal.ArchFacts) *ioQueue {
	t.Helper()
	eng, qid := uint32(progCore*16+5), uint32(2)
	q, err := c.dev.InitQueue(eng, qid, 32, runtime.AllocOptions{Core: progCore})
	if err != nil {
		t.Fatal(err)
	}
	reg := func(side uint64) uint64 {
		return f.CSRBase() + f.UDMABase(int(eng)) + side + uint64(qid)*dhal.UDMAQueueStride + dhal.UDMAQueueTailInc
	}
	io := &ioQueue{Queue: q, t: t, tailTX: reg(dhal.UDMAM2SQueues), tailRX: reg(dhal.UDMAS2MQueues)}
	io.src = mustMem(t, c.dev, 4*ioBatch, runtime.AllocOptions{Core: progCore})
	io.dst = mustMem(t, c.dev, 4*ioBatch, runtime.AllocOptions{Core: progCore})
	data := make([]byte, 4*ioBatch)
	for i := range data {
		data[i] = byte(i*7 + 3)
	}
	if err := io.src.Write(0, data); err != nil {
		t.Fatal(err)
	}
	return io
}

// stageBatch writes batch k's descriptor pair without ringing.
func (io *ioQueue) stageBatch(k uint64) {
	io.t.Helper()
	tx, rx := io.Descriptors([]runtime.Copy{{Src: io.src.PA + k*ioBatch, Dst: io.dst.PA + k*ioBatch, Len: ioBatch}})
	if err := io.WriteDescriptors(tx, rx); err != nil {
		io.t.Fatal(err)
	}
}

// done is how many descriptor pairs the queue ran, and its TX side's state.
func (io *ioQueue) done() (uint32, ioctl.DMAQueueState) {
	io.t.Helper()
	tx, rx, err := io.State()
	if err != nil {
		io.t.Fatal(err)
	}
	return rx.HeadPointer, tx
}

// settle waits until the queue ran want pairs, then a while more, and
// fails if it ran another number.
func (io *ioQueue) settle(want uint32, when string) {
	io.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for n, _ := io.done(); n < want && time.Now().Before(deadline); n, _ = io.done() {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // room for a wrong extra batch to show
	if n, st := io.done(); n != want || st.HWStatus != 0 {
		io.t.Fatalf("%s: %d batches ran (hw status %#x), want %d", when, n, st.HWStatus, want)
	}
}

// The first execute starts the queues one increment at a time: the
// doorbell starts the exec queue, whose trigger descriptors release one
// batch of the IO queue; each of PE's CTRL_WR tail increments releases
// one more; an increment past what is staged waits, then proceeds once
// the host stages the batch. The doorbell semaphore is learned from the
// request's increment: another semaphore's increment afterwards writes
// no START/END. On V2, V3 and V4.
func TestExecQueuesOneIncrementAtATime(t *testing.T) {
	for _, inst := range []string{"trn1.2xlarge", "trn2.48xlarge", "trn3.48xlarge"} {
		t.Run(inst, func(t *testing.T) {
			c := newProgClientConfig(t, device.Config{Instance: inst})
			f := archFacts(t, inst)
			io := newIOQueue(t, c, f)
			io.stageBatch(0)
			io.stageBatch(1)
			const step = 20 // the host's semaphore that paces PE
			pe := c.image(
				seq.NewWait(seq.WaitSemGE, inferenceStart, 1),
				seq.NewWait(seq.WaitSemGE, step, 1),
				seq.NewCSRWrite(io.tailTX, 1), seq.NewCSRWrite(io.tailRX, 1),
				seq.NewWait(seq.WaitSemGE, step, 2),
				seq.NewCSRWrite(io.tailTX, 1), seq.NewCSRWrite(io.tailRX, 1),
				seq.NewWait(seq.WaitSemGE, step, 3),
				seq.NewRecord(seq.OpHalt))
			c.deliver([seq.NumEngines]uint64{seq.PE: pe})
			one := mustMem(t, c.dev, 64, runtime.AllocOptions{Core: progCore})
			var v [4]byte
			binary.LittleEndian.PutUint32(v[:], 1)
			if err := one.Write(0, v[:]); err != nil {
				t.Fatal(err)
			}
			// Group B: the trigger pairs bump the IO queue's tails by one.
			c.stage([]runtime.Copy{{Src: one.PA, Dst: io.tailTX, Len: 4}, {Src: one.PA, Dst: io.tailRX, Len: 4}})
			io.settle(0, "staged, before the doorbell")

			if err := c.dev.Doorbell(progCore, inferenceStart, 1); err != nil {
				t.Fatal(err)
			}
			io.settle(1, "after the doorbell (the trigger's increment)")
			for k := uint32(2); k <= 3; k++ {
				if err := c.dev.SemaphoreWrite(progCore, step, k-1); err != nil {
					t.Fatal(err)
				}
				want := min(k, 2) // the second CTRL_WR moves the tail past what is staged
				io.settle(want, "after PE's increment")
			}
			if _, st := io.done(); st.SWStatus != uint32(2) {
				t.Fatalf("the waiting queue is not enabled: %+v", st)
			}
			io.stageBatch(2) // the host stages the batch the tail waits for
			io.settle(3, "once the batch is staged")
			got := make([]byte, 3*ioBatch)
			if err := io.dst.Read(0, got); err != nil {
				t.Fatal(err)
			}
			want := make([]byte, 3*ioBatch)
			if err := io.src.Read(0, want); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Error("the IO batches did not land")
			}

			// The runtime's own use of another semaphore is no doorbell.
			before := tails(t, c.nqs)
			if err := c.dev.Doorbell(progCore, 3, 1); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
			if after := tails(t, c.nqs); !slices.Equal(after, before) {
				t.Errorf("an increment of semaphore 3 wrote records: tails %v -> %v", before, after)
			}
			if err := c.dev.SemaphoreWrite(progCore, step, 3); err != nil {
				t.Fatal(err)
			}
			c.waitStates(1, seq.Halted)
			// The learned doorbell still rings: no request, the semantic answer.
			if err := c.dev.Doorbell(progCore, inferenceStart, 1); err != nil {
				t.Fatal(err)
			}
			c.expect(runtime.RecordStart)
			c.expect(runtime.RecordEnd)
		})
	}
}

// archFacts are the facts of instance's architecture.
func archFacts(t *testing.T, instance string) *dhal.ArchFacts {
	t.Helper()
	inst, err := dhal.LookupInstance(instance)
	if err != nil {
		t.Fatal(err)
	}
	f, err := dhal.Facts(inst.Product.Arch)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Descriptors the host stores through a mapping of the rings, with no
// request telling the daemon, start an IO queue whose tail a program
// moved past what was staged: the waiting queue finds them (the engine
// polls, chip/dma/stagepoll.go).
func TestQueuesFindMappedDescriptors(t *testing.T) {
	const inst = "trn2.48xlarge"
	c := newProgClientConfig(t, device.Config{Instance: inst})
	io := newIOQueue(t, c, archFacts(t, inst))
	pe := c.image(seq.NewWait(seq.WaitSemGE, inferenceStart, 1),
		seq.NewCSRWrite(io.tailTX, 1), seq.NewCSRWrite(io.tailRX, 1), seq.NewRecord(seq.OpHalt))
	// Mapped first: the stores come well inside the poll's budget.
	txMap, err := io.TX.Map()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(txMap)
	rxMap, err := io.RX.Map()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(rxMap)
	c.deliver([seq.NumEngines]uint64{seq.PE: pe})
	if err := c.dev.Doorbell(progCore, inferenceStart, 1); err != nil {
		t.Fatal(err)
	}
	c.waitStates(1, seq.Halted)
	io.settle(0, "a tail past what is staged")
	tx, rx := io.Descriptors([]runtime.Copy{{Src: io.src.PA, Dst: io.dst.PA, Len: ioBatch}})
	storeDesc(rxMap, rx[0])
	storeDesc(txMap, tx[0])
	io.settle(1, "once stored through the mapping")
	got, want := make([]byte, ioBatch), make([]byte, ioBatch)
	if err := io.dst.Read(0, got); err != nil {
		t.Fatal(err)
	}
	if err := io.src.Read(0, want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("the batch did not land")
	}
}

// storeDesc stores d at the start of a mapped ring, its length and
// control word (what makes it staged) last and whole, as a careful host
// would.
func storeDesc(b []byte, d dmadesc.Desc) {
	var buf [dmadesc.Size]byte
	d.Put(buf[:])
	copy(b[4:dmadesc.Size], buf[4:])
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b[0])), d.LenCtrl)
}
