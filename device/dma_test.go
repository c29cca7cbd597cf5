package device

import (
	"context"
	"syscall"
	"testing"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
)

func ringHandle(t *testing.T, d *Device, tgid int32, descs uint64) (uint64, *mempool.Chunk) {
	t.Helper()
	c, err := d.mem.pool.Alloc(mempool.AllocRequest{Size: descs * dmadesc.Size, Host: true, Lifespan: mempool.LifespanCurProcess, PID: tgid})
	if err != nil {
		t.Fatal(err)
	}
	h, err := d.mem.pool.Handle(c)
	if err != nil {
		t.Fatal(err)
	}
	return h, c
}

// The driver's checks on queue init, doorbell, ack and copyout.
func TestDMAQueueValidation(t *testing.T) {
	d := newTestSystem(t, "trn2.48xlarge").Devices[0]
	ctx := context.Background()
	f := open(t, d, syscall.O_RDWR, 7)
	h, _ := ringHandle(t, d, 7, 64)
	init := func(v ioctl.DMAQueueInit) Result {
		res, _ := call(t, ctx, f, 7, ioctl.CmdDMAQueueInit, v)
		return res
	}
	good := ioctl.DMAQueueInit{EngID: 3, QID: 2, TXDescCount: 64, RXDescCount: 64, TXHandle: h, RXHandle: h}
	wantErrno(t, "good init", init(good), 0)
	bad := good
	bad.EngID = 132
	wantErrno(t, "engine 132", init(bad), syscall.EINVAL)
	bad = good
	bad.QID = 16
	wantErrno(t, "queue 16", init(bad), syscall.EINVAL)
	bad = good
	bad.EngID, bad.QID = 128, 1 // core 1's default h2t queue
	wantErrno(t, "default h2t queue", init(bad), syscall.EALREADY)
	bad = good
	bad.RXCHandle = h
	wantErrno(t, "completion ring", init(bad), syscall.EPERM)
	bad = good
	bad.TXHandle, bad.TXDescCount = 0, 8
	wantErrno(t, "no TX ring, 8 descriptors", init(bad), syscall.EPERM)
	bad = good
	bad.TXHandle = 0xdead // an invalid handle means no ring
	wantErrno(t, "invalid TX handle", init(bad), 0)

	var batch ioctl.DMAQueueInitBatch
	batch.Count = 256
	res, _ := call(t, ctx, f, 7, ioctl.CmdDMAQueueInitBatch, batch)
	wantErrno(t, "batch of 256", res, syscall.E2BIG)
	batch.Count = 3
	batch.Entries[0], batch.Entries[1], batch.Entries[2] = good, good, good
	batch.Entries[1].QID, batch.Entries[2].QID = 3, 16
	res, _ = call(t, ctx, f, 7, ioctl.CmdDMAQueueInitBatch, batch)
	wantErrno(t, "batch with a bad third entry", res, syscall.EINVAL)
	if st := d.chip.Engine(3).QueueState(3, dma.TX); st.Length != 64 {
		t.Errorf("the batch's second entry was not applied: %+v", st)
	}

	start := func(v ioctl.DMAQueueCopyStart) Result {
		res, _ := call(t, ctx, f, 7, ioctl.CmdDMAQueueCopyStart, v)
		return res
	}
	wantErrno(t, "start engine 132", start(ioctl.DMAQueueCopyStart{EngID: 132, RXDescCount: 1}), syscall.EINVAL)
	wantErrno(t, "start queue 16", start(ioctl.DMAQueueCopyStart{EngID: 3, QID: 16, RXDescCount: 1}), syscall.EPERM)
	wantErrno(t, "start beyond the ring", start(ioctl.DMAQueueCopyStart{EngID: 3, QID: 2, TXDescCount: 65, RXDescCount: 1}), syscall.EPERM)
	wantErrno(t, "start without RX", start(ioctl.DMAQueueCopyStart{EngID: 3, QID: 2, TXDescCount: 1}), syscall.EINVAL)

	ack := func(v ioctl.DMAAckCompleted) Result {
		res, _ := call(t, ctx, f, 7, ioctl.CmdDMAAckCompleted, v)
		return res
	}
	wantErrno(t, "ack", ack(ioctl.DMAAckCompleted{EngID: 3, QID: 2, Count: 5}), 0)
	wantErrno(t, "ack queue 16", ack(ioctl.DMAAckCompleted{EngID: 3, QID: 16}), syscall.EINVAL)
	h48, _ := ringHandle(t, d, 7, 48)
	wantErrno(t, "init 48", init(ioctl.DMAQueueInit{EngID: 4, TXDescCount: 48, RXDescCount: 48, TXHandle: h48, RXHandle: h48}), 0)
	wantErrno(t, "ack on a 48-descriptor ring", ack(ioctl.DMAAckCompleted{EngID: 4, Count: 1}), syscall.EINVAL)

	out := func(v ioctl.DMADescriptorCopyout) Result {
		res, _ := call(t, ctx, f, 7, ioctl.CmdDMADescriptorCopyout, v)
		return res
	}
	wantErrno(t, "copyout 0", out(ioctl.DMADescriptorCopyout{EngID: 3, QID: 2, Count: 0}), syscall.EINVAL)
	wantErrno(t, "copyout past the ring", out(ioctl.DMADescriptorCopyout{EngID: 3, QID: 2, StartIndex: 60, Count: 5}), syscall.EFBIG)
	wantErrno(t, "copyout type 2", out(ioctl.DMADescriptorCopyout{EngID: 3, QID: 2, Type: 2, Count: 1}), syscall.EINVAL)

	res, _ = call(t, ctx, f, 7, ioctl.CmdDMAEngSetState, ioctl.DMAEngSetState{EngID: 3, State: 7})
	wantErrno(t, "set state 7 (ignored)", res, 0)
	if st := d.chip.Engine(3).State(); st.TX != dmadesc.StateNormal {
		t.Errorf("state 7 changed the engine: %+v", st)
	}
}

// When the owner detaches its queues fall back to the dummy ring; the NX
// queue keeps its ring; another process's queues are untouched.
func TestDMAQueuesResetAtExit(t *testing.T) {
	d := newTestSystem(t, "trn2.48xlarge").Devices[0]
	ctx := context.Background()
	f7 := open(t, d, syscall.O_RDWR, 7)
	f8 := open(t, d, syscall.O_RDWR, 8)
	h7, c7 := ringHandle(t, d, 7, 64)
	h8, c8 := ringHandle(t, d, 8, 64)
	for _, q := range []struct {
		f    *File
		tgid int32
		h    uint64
		eng  uint32
		qid  uint32
	}{{f7, 7, h7, 3, 2}, {f7, 7, h7, 1, 14}, {f8, 8, h8, 3, 5}} {
		res, _ := call(t, ctx, q.f, q.tgid, ioctl.CmdDMAQueueInit, ioctl.DMAQueueInit{EngID: q.eng, QID: q.qid, TXDescCount: 64, RXDescCount: 64, TXHandle: q.h, RXHandle: q.h})
		wantErrno(t, "init", res, 0)
	}
	f7.Flush(ctx, Caller{Tgid: 7})
	if st := d.chip.Engine(3).QueueState(2, dma.TX); st.Base != d.dma.dummy.PA || st.Length != dummyRingDescs {
		t.Errorf("exited process's queue: %+v, want the dummy ring at %#x", st, d.dma.dummy.PA)
	}
	if st := d.chip.Engine(1).QueueState(14, dma.RX); st.Base != c7.PA {
		t.Errorf("NX queue was reset: %+v", st)
	}
	if st := d.chip.Engine(3).QueueState(5, dma.TX); st.Base != c8.PA {
		t.Errorf("another process's queue changed: %+v", st)
	}
}

// Engine windows cover every range the engines reach.
func TestEngineMemoryWindows(t *testing.T) {
	for _, inst := range []string{"trn1.2xlarge", "trn2.48xlarge", "trn3.48xlarge"} {
		d := newTestSystem(t, inst).Devices[0]
		m, f := d.chip.Mem(), d.sys.Arch
		for _, r := range append(f.ProgramRegions(), dhal.Range{Base: f.HostBase, Size: 4096}) {
			if _, ok := m.Slice(r.Base, r.Size); !ok {
				t.Errorf("%s: %#x+%#x unreachable", inst, r.Base, r.Size)
			}
		}
		if _, ok := m.Slice(f.HBMBases[0]+f.HBMSize, 4); ok {
			t.Errorf("%s: the end of HBM 0 is reachable", inst)
		}
	}
}

func TestH2TQueues(t *testing.T) {
	d := newTestSystem(t, "trn2.48xlarge").Devices[0]
	ctx := context.Background()
	f := open(t, d, syscall.O_RDWR, 7)
	alloc := func(v ioctl.H2TDMAAllocQueues) (Result, ioctl.H2TDMAAllocQueues) {
		return call(t, ctx, f, 7, ioctl.CmdH2TDMAAllocQueues, v)
	}
	free := func(nc uint8, bmap uint32) Result {
		res, _ := call(t, ctx, f, 7, ioctl.CmdH2TDMAFreeQueues, ioctl.H2TDMAFreeQueues{NCID: nc, QueueBmap: bmap})
		return res
	}
	res, v := alloc(ioctl.H2TDMAAllocQueues{NCID: 0, CopyQueueCnt: 2, ServiceQueueCnt: 1})
	// Engine 128 serves cores 0 and 1, whose default queues are 0 and 1.
	if res != 0 || v.CopyQueueBmap != 0b1100 || v.ServiceQueueBmap != 0b10000 || v.CopyDefaultQueue != 0 {
		t.Fatalf("alloc: %d %+v", res, v)
	}
	if st := d.chip.Engine(128).QueueState(2, dma.RX); st.Length != h2tRingDescs || st.SWStatus != uint32(dma.QueueEnabled) {
		t.Errorf("copy queue 2 not programmed: %+v", st)
	}
	h, _ := ringHandle(t, d, 7, 64)
	qi := func(q uint32) Result {
		res, _ := call(t, ctx, f, 7, ioctl.CmdDMAQueueInit, ioctl.DMAQueueInit{EngID: 128, QID: q, TXDescCount: 64, RXDescCount: 64, TXHandle: h, RXHandle: h})
		return res
	}
	wantErrno(t, "init of a copy queue", qi(2), syscall.EALREADY)
	wantErrno(t, "init of a service queue", qi(4), 0)
	c, err := d.mem.pool.Alloc(mempool.AllocRequest{Size: 4096, NCID: 0, MemType: mempool.MemTypeUnknownDevice, Lifespan: mempool.LifespanCurProcess, PID: 7})
	if err != nil {
		t.Fatal(err)
	}
	wantErrno(t, "zero copy on a claimed copy queue", d.zeroCopyQueue(c, 3), 0)
	wantErrno(t, "zero copy on a service queue", d.zeroCopyQueue(c, 4), syscall.ENOENT)

	res, _ = alloc(ioctl.H2TDMAAllocQueues{NCID: 8, CopyQueueCnt: 1})
	wantErrno(t, "core 8", res, syscall.E2BIG)
	res, _ = alloc(ioctl.H2TDMAAllocQueues{NCID: 1, CopyQueueCnt: 10, ServiceQueueCnt: 6})
	wantErrno(t, "16 queues", res, syscall.E2BIG)
	// 11 queues are left; asking for 12 claims none.
	res, _ = alloc(ioctl.H2TDMAAllocQueues{NCID: 1, CopyQueueCnt: 12})
	wantErrno(t, "more queues than free", res, syscall.EPERM)
	res, v = alloc(ioctl.H2TDMAAllocQueues{NCID: 1, CopyQueueCnt: 11})
	if res != 0 || v.CopyQueueBmap != 0xffe0 {
		t.Fatalf("the failed call left claims behind: %d %+v", res, v)
	}

	// Queue 9 belongs to core 1: freeing it for core 0 is ENXIO, the
	// others still go; the default queue bit is ignored.
	wantErrno(t, "free", free(0, 1<<0|1<<2|1<<3|1<<9), syscall.ENXIO)
	if len(d.h2t.claims) != 12 {
		t.Errorf("%d claims after freeing two", len(d.h2t.claims))
	}
	if st := d.chip.Engine(128).QueueState(2, dma.TX); st.SWStatus != uint32(dma.QueueDisabled) {
		t.Errorf("freed copy queue still enabled: %+v", st)
	}
	// A reset of core 1 frees its eleven queues.
	d.mu.Lock()
	d.reset.startLocked(1<<1, 77)
	d.mu.Unlock()
	if len(d.h2t.claims) != 1 {
		t.Errorf("%d claims after core 1's reset, want core 0's service queue", len(d.h2t.claims))
	}
}
