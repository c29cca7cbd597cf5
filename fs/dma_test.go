package fs_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

func mustMem(t *testing.T, d *runtime.Device, size uint64, o runtime.AllocOptions) *runtime.Mem {
	t.Helper()
	m, err := d.Alloc(size, o)
	if err != nil {
		t.Fatalf("alloc %d bytes (%+v): %v", size, o, err)
	}
	return m
}

func mustMap(t *testing.T, m *runtime.Mem) []byte {
	t.Helper()
	v, err := m.Map()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(v) })
	return v
}

// pieces splits a size-byte copy into 64 KiB descriptors.
func pieces(src, dst, size uint64) []runtime.Copy {
	var out []runtime.Copy
	for off := uint64(0); off < size; off += dmadesc.MaxDescLen {
		n := min(size-off, dmadesc.MaxDescLen)
		out = append(out, runtime.Copy{Src: src + off, Dst: dst + off, Len: uint32(n & dmadesc.LenMask)})
	}
	return out
}

func waitMarker(t *testing.T, m *runtime.Marker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// A 1 MiB pattern goes host -> HBM on one queue and HBM -> host on a
// second; completion is seen only through the mapped marker word.
func TestDMAHostToHBMAndBack(t *testing.T) {
	for _, inst := range []string{"trn1.2xlarge", "trn2.48xlarge"} {
		t.Run(inst, func(t *testing.T) {
			dir, _ := testutil.Mount(t, inst)
			dev, err := runtime.Host{Root: dir}.Open(0)
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			const size = 1 << 20
			src := mustMem(t, dev, size, runtime.AllocOptions{Host: true})
			hbm := mustMem(t, dev, size, runtime.AllocOptions{Channel: 1})
			dst := mustMem(t, dev, size, runtime.AllocOptions{Host: true})
			srcView, dstView := mustMap(t, src), mustMap(t, dst)
			for i := range srcView {
				srcView[i] = byte(i*31 + i>>12)
			}
			marker, err := dev.NewMarker()
			if err != nil {
				t.Fatal(err)
			}
			defer marker.Close()

			// Queue 1: rings in host memory, descriptors written straight
			// into the mapped rings (as a runtime with its own rings does).
			up, err := dev.InitQueue(2, 3, 64, runtime.AllocOptions{Host: true})
			if err != nil {
				t.Fatal(err)
			}
			copies := append(pieces(src.PA, hbm.PA, size), marker.Copy())
			tx, rx := up.Descriptors(copies)
			txView, rxView := mustMap(t, up.TX), mustMap(t, up.RX)
			for i := range tx {
				tx[i].Put(txView[i*dmadesc.Size:])
				rx[i].Put(rxView[i*dmadesc.Size:])
			}
			if err := up.Start(uint32(len(copies))); err != nil {
				t.Fatal(err)
			}
			waitMarker(t, marker)

			// Queue 2, on another engine: rings in HBM, descriptors written
			// with DMA_COPY_DESCRIPTORS64.
			down, err := dev.InitQueue(5, 0, 64, runtime.AllocOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := down.Submit(append(pieces(hbm.PA, dst.PA, size), marker.Copy())); err != nil {
				t.Fatal(err)
			}
			waitMarker(t, marker)
			if !bytes.Equal(srcView, dstView) {
				t.Fatal("the pattern did not survive host -> HBM -> host")
			}
			txs, rxs, err := down.State()
			if err != nil {
				t.Fatal(err)
			}
			if txs.HeadPointer != 17 || rxs.HeadPointer != 17 || txs.SWStatus != uint32(dma.QueueEnabled) || rxs.HWStatus != 0 || txs.Length != 64 || txs.BaseAddr != down.TX.PA {
				t.Errorf("queue state after the copy: TX %+v RX %+v", txs, rxs)
			}
			// Read the descriptors back.
			back := make([]byte, 2*dmadesc.Size)
			v := ioctl.DMADescriptorCopyout{EngID: 5, QID: 0, Type: 1, Count: 2, Buffer: uint64(testutil.AddrOf(back))}
			r, e := testutil.Ioctl(dev.Fd(), ioctl.CmdDMADescriptorCopyout, &v)
			expectErrno(t, "DESCRIPTOR_COPYOUT", r, e, 0, 0)
			if d := dmadesc.Decode(back[dmadesc.Size:]); d.Addr != dst.PA+dmadesc.MaxDescLen || d.Len() != dmadesc.MaxDescLen {
				t.Errorf("RX descriptor 1 reads back %+v", d)
			}
		})
	}
}

// 90 single-byte copies through a 32-descriptor ring: three wraps, each
// with the next ring id.
func TestDMARingWrap(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	dev, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	buf := mustMem(t, dev, 8192, runtime.AllocOptions{Host: true})
	view := mustMap(t, buf)
	marker, err := dev.NewMarker()
	if err != nil {
		t.Fatal(err)
	}
	defer marker.Close()
	q, err := dev.InitQueue(0, 1, 32, runtime.AllocOptions{Host: true})
	if err != nil {
		t.Fatal(err)
	}
	for k := range 150 {
		view[k] = byte(k + 1)
	}
	for batch := range 5 {
		var copies []runtime.Copy
		for i := range 29 {
			k := uint64(batch*29 + i)
			copies = append(copies, runtime.Copy{Src: buf.PA + k, Dst: buf.PA + 4096 + k, Len: 1})
		}
		if err := q.Submit(append(copies, marker.Copy())); err != nil {
			t.Fatal(err)
		}
		waitMarker(t, marker)
	}
	if !bytes.Equal(view[4096:4096+145], view[:145]) {
		t.Fatal("bytes lost across ring wraps")
	}
	tx, _, err := q.State()
	if err != nil {
		t.Fatal(err)
	}
	if tx.HeadPointer != 150%32 || tx.HWStatus != 0 {
		t.Errorf("TX after 150 descriptors: %+v", tx)
	}
}

// Bad descriptors: a host address outside every host chunk is refused when
// the descriptors are written; a device address outside HBM stops the
// engine with an abort and changes nothing; length 0 moves 64 KiB.
func TestDMABadDescriptors(t *testing.T) {
	dir, sys := testutil.Mount(t, "trn2.48xlarge")
	dev, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	host := mustMem(t, dev, 1<<17, runtime.AllocOptions{Host: true})
	view := mustMap(t, host)
	for i := range 1 << 16 {
		view[i] = byte(i ^ i>>8)
	}
	q, err := dev.InitQueue(7, 2, 32, runtime.AllocOptions{Host: true})
	if err != nil {
		t.Fatal(err)
	}
	// The host page just past the chunk is nobody's.
	outside := host.PA + host.Size + 0x100000
	err = q.Submit([]runtime.Copy{{Src: outside, Dst: host.PA, Len: 16}})
	if !isErrno(err, unix.EINVAL) {
		t.Errorf("host address outside every chunk: %v, want EINVAL", err)
	}

	// Length 0 encodes 64 KiB.
	marker, err := dev.NewMarker()
	if err != nil {
		t.Fatal(err)
	}
	defer marker.Close()
	q2, err := dev.InitQueue(7, 3, 32, runtime.AllocOptions{Host: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := q2.Submit([]runtime.Copy{{Src: host.PA, Dst: host.PA + 1<<16, Len: 0}, marker.Copy()}); err != nil {
		t.Fatal(err)
	}
	waitMarker(t, marker)
	if !bytes.Equal(view[:1<<16], view[1<<16:]) {
		t.Fatal("a length-0 descriptor did not move 65536 bytes")
	}

	// A destination beyond the end of HBM channel 0. Engine 9 is core 0's:
	// its ERROR queue gets a record.
	errQ, err := dev.InitNQ(0, runtime.NQTypeError, 2, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer errQ.Close()
	if err := dev.EnableNQs(0, 1<<2); err != nil {
		t.Fatal(err)
	}
	f := sys.Arch
	before := bytes.Clone(view)
	bad := f.HBMBases[0] + f.HBMSize - 8
	q3, err := dev.InitQueue(9, 4, 32, runtime.AllocOptions{Host: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := q3.Submit([]runtime.Copy{{Src: host.PA, Dst: bad, Len: 64}, {Src: host.PA, Dst: host.PA + 100, Len: 4}}); err != nil {
		t.Fatal(err)
	}
	if tx, rx := waitAborted(t, q3); rx.HWStatus&dma.StatusWriteError == 0 || rx.HeadPointer != 0 || tx.HeadPointer != 0 {
		t.Errorf("aborted queue state TX %+v RX %+v", tx, rx)
	}
	st, err := dev.EngineState(9)
	if err != nil {
		t.Fatal(err)
	}
	if st.RXState != uint32(dmadesc.StateAbort) || st.MaxQueues != 16 {
		t.Errorf("engine 9 after a write error: %+v", st)
	}
	if !bytes.Equal(before, view) {
		t.Error("the aborted queue changed host memory")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, err := errQ.Next(ctx)
	if err != nil {
		t.Fatalf("no error notification: %v", err)
	}
	if rec[3]&0x1f != 0x03 || rec[4] != 9 || rec[6] != 4 || rec[0]&dma.StatusWriteError == 0 {
		t.Errorf("error record %x", rec)
	}
	if got := testutil.DeviceCounter(t, dir, 0, "neuron_core0/stats/status/hw_dma_abort_error/total"); got != 1 {
		t.Errorf("hw_dma_abort_error = %d", got)
	}
	// The engine comes back once set normal and the queue re-initialised.
	if err := dev.SetEngineState(9, dmadesc.StateNormal); err != nil {
		t.Fatal(err)
	}
	if st, _ := dev.EngineState(9); st.RXState != uint32(dmadesc.StateNormal) {
		t.Errorf("engine 9 after set normal: %+v", st)
	}
}

// In strict mode a descriptor aimed at another process's chunk is refused.
func TestDMAStrictDescriptors(t *testing.T) {
	dir, _ := testutil.MountConfig(t, device.Config{Instance: "trn2.48xlarge", Strict: true})
	cmd, handles, stdin := startAllocHelper(t, dir)
	defer func() { stdin.Close(); cmd.Wait() }()
	dev, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	other := ioctl.MemGetExtendedInfo{MemHandle: handles[0]}
	r, e := testutil.Ioctl(dev.Fd(), ioctl.CmdMemGetExtendedInfo, &other)
	expectErrno(t, "info of the other process's chunk", r, e, 0, 0)
	mine := mustMem(t, dev, 4096, runtime.AllocOptions{Host: true})
	q, err := dev.InitQueue(1, 1, 32, runtime.AllocOptions{Host: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Submit([]runtime.Copy{{Src: mine.PA, Dst: other.PA, Len: 16}}); !isErrno(err, unix.EPERM) {
		t.Errorf("descriptor into another process's chunk under --strict: %v, want EPERM", err)
	}
}

func isErrno(err error, want unix.Errno) bool {
	var e unix.Errno
	return errors.As(err, &e) && e == want
}

// A core reset re-initialises the core's DMA engines: queued work is cut,
// the queues come back stopped and empty, and the engines normal.
func TestDMAResetReinitialisesQueues(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	dev, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	const size = 64 << 20
	src := mustMem(t, dev, size, runtime.AllocOptions{Core: 1})
	dst := mustMem(t, dev, size, runtime.AllocOptions{Core: 1, Channel: 1})
	q, err := dev.InitQueue(17, 4, 2048, runtime.AllocOptions{Host: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Submit(pieces(src.PA, dst.PA, size)); err != nil {
		t.Fatal(err)
	}
	if err := dev.SetEngineState(18, dmadesc.StateAbort); err != nil {
		t.Fatal(err)
	}
	if err := dev.Reset(1 << 1); err != nil {
		t.Fatal(err)
	}
	tx, rx, err := q.State()
	if err != nil {
		t.Fatal(err)
	}
	if tx.SWStatus != uint32(dma.QueueDisabled) || rx.Length != 0 || tx.HeadPointer != 0 {
		t.Errorf("queue after its core's reset: TX %+v RX %+v", tx, rx)
	}
	if st, _ := dev.EngineState(18); st.TXState != uint32(dmadesc.StateNormal) {
		t.Errorf("engine 18 after its core's reset: %+v", st)
	}
	if err := q.Start(1); !isErrno(err, unix.EPERM) {
		t.Errorf("doorbell on a reset queue: %v, want EPERM (no ring)", err)
	}
	// Core 0's engines were not touched.
	q0, err := dev.InitQueue(1, 1, 32, runtime.AllocOptions{Host: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Reset(1 << 1); err != nil {
		t.Fatal(err)
	}
	if tx, _, _ := q0.State(); tx.SWStatus != uint32(dma.QueueEnabled) {
		t.Errorf("core 0's queue after core 1's reset: %+v", tx)
	}
}

// Host memory is one on a host: a host chunk allocated through device 0
// has an address no other device hands out, and device 1's engines read
// it (the caller has both devices open, which the descriptor check needs).
func TestDMAReadsAnotherDevicesHostChunk(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	d0, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d0.Close()
	d1, err := runtime.Host{Root: dir}.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	defer d1.Close()
	src := mustMem(t, d0, 4096, runtime.AllocOptions{Host: true})
	srcView := mustMap(t, src)
	for i := range srcView {
		srcView[i] = byte(i*7 + 3)
	}
	out := mustMem(t, d1, 4096, runtime.AllocOptions{Host: true})
	if out.PA == src.PA {
		t.Fatalf("devices 0 and 1 both handed out host address %#x", src.PA)
	}
	outView := mustMap(t, out)
	marker, err := d1.NewMarker()
	if err != nil {
		t.Fatal(err)
	}
	defer marker.Close()
	q, err := d1.InitQueue(0, 1, 32, runtime.AllocOptions{Host: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Submit([]runtime.Copy{{Src: src.PA, Dst: out.PA, Len: 4096}, marker.Copy()}); err != nil {
		t.Fatal(err)
	}
	waitMarker(t, marker)
	if !bytes.Equal(outView, srcView) {
		t.Fatalf("device 1 read % x from device 0's host chunk, want % x", outView[:8], srcView[:8])
	}
}

// waitAborted waits for q to abort and returns its state then; a queue
// that moves its RX head first ran what should have failed.
func waitAborted(t *testing.T, q *runtime.Queue) (tx, rx ioctl.DMAQueueState) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tx, rx, err := q.State()
		if err != nil {
			t.Fatal(err)
		}
		if rx.SWStatus == uint32(dma.QueueAborted) {
			return tx, rx
		}
		if rx.HeadPointer != 0 {
			t.Fatalf("the queue ran instead of aborting: TX %+v RX %+v", tx, rx)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queue never aborted: TX %+v RX %+v", tx, rx)
		}
		time.Sleep(time.Millisecond)
	}
}
