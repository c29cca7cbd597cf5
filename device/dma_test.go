package device

import (
	"context"
	"syscall"
	"testing"

	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/dma"
	"github.com/neuronfs/neuronfs/ioctl"
)

func ringHandle(t *testing.T, d *Device, tgid int32, descs uint64) (uint64, *mempool.Chunk) {
	t.Helper()
	c, err := d.pool.Alloc(mempool.AllocRequest{Size: descs * dma.DescSize, Host: true, Lifespan: mempool.LifespanCurProcess, PID: tgid})
	if err != nil {
		t.Fatal(err)
	}
	h, err := d.pool.Handle(c)
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
	if st := d.dma.engines[3].QueueState(3, dma.TX); st.Length != 64 {
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
	if st := d.dma.engines[3].State(); st.TX != dma.StateNormal {
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
	if st := d.dma.engines[3].QueueState(2, dma.TX); st.Base != d.dma.dummy.PA || st.Length != dummyRingDescs {
		t.Errorf("exited process's queue: %+v, want the dummy ring at %#x", st, d.dma.dummy.PA)
	}
	if st := d.dma.engines[1].QueueState(14, dma.RX); st.Base != c7.PA {
		t.Errorf("NX queue was reset: %+v", st)
	}
	if st := d.dma.engines[3].QueueState(5, dma.TX); st.Base != c8.PA {
		t.Errorf("another process's queue changed: %+v", st)
	}
}

// Engine windows cover every range the engines reach, without overlap.
func TestEngineMemoryWindows(t *testing.T) {
	for _, inst := range []string{"trn1.2xlarge", "trn2.48xlarge", "trn3.48xlarge"} {
		d := newTestSystem(t, inst).Devices[0]
		m, f := d.dma.mem, d.sys.Arch
		for i := 1; i < len(m.windows); i++ {
			if m.windows[i-1].base+m.windows[i-1].size >= m.windows[i].base {
				t.Errorf("%s: windows %d and %d touch", inst, i-1, i)
			}
		}
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
