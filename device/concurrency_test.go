package device

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/device/mempool"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Copies between chunks, frees and non-zero scrubs of the same channel at
// once must all finish: a copy's two memory views once deadlocked with a
// free's punch-hole waiting between them.
func TestCopyFreeScrubConcurrently(t *testing.T) {
	s := newTestSystem(t, "trn2.3xlarge")
	d := s.Devices[0]
	const tgid = 7
	f := open(t, d, syscall.O_RDWR, tgid)
	ctx := context.Background()
	alloc := func() uint64 {
		c, err := d.mem.pool.Alloc(mempool.AllocRequest{Size: 256 << 10, Channel: 1, Lifespan: mempool.LifespanCurProcess, PID: tgid})
		if err != nil {
			return 0
		}
		h, _ := d.mem.pool.Handle(c)
		return h
	}
	src, dst := alloc(), alloc()
	stop := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	loop := func(op func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				op()
			}
		}()
	}
	var copies, frees, scrubs int
	loop(func() {
		call(t, ctx, f, tgid, ioctl.CmdMemCopy64, ioctl.MemCopy64{SrcMemHandle: src, DstMemHandle: dst, Size: 256 << 10})
		copies++
	})
	loop(func() {
		call(t, ctx, f, tgid, ioctl.CmdMemFree, ioctl.MemFree{MemHandle: alloc()})
		frees++
	})
	loop(func() {
		call(t, ctx, f, tgid, ioctl.CmdHBMScrubStart, ioctl.HBMScrubStart{HBMIndex: 1, InitVal: 0x5a5a5a5a})
		call(t, ctx, f, tgid, ioctl.CmdHBMScrubWait, ioctl.HBMScrubWait{HBMIndex: 1})
		scrubs++
	})
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		t.Logf("%d copies, %d frees, %d scrubs", copies, frees, scrubs)
	case <-time.After(30 * time.Second):
		t.Fatal("copies, frees and scrubs hung")
	}
}
