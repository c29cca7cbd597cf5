package device

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/ioctl"
)

func uuid(b byte) ioctl.UUID {
	var u ioctl.UUID
	u.Value[0] = b
	return u
}

func TestCRWLWriterReaderProtocol(t *testing.T) {
	d := newTestSystem(t, "trn2.48xlarge").Devices[0]
	ctx := context.Background()
	a := open(t, d, syscall.O_RDWR, 100)
	b := open(t, d, syscall.O_RDWR, 200)

	res, _ := call(t, ctx, a, 100, ioctl.CmdCRWLWriterEnter, ioctl.CRWL{NCID: 2, UUID: uuid(1)})
	wantErrno(t, "writer enter", res, 0)
	// The driver checks the index against its 8 slots, not the core count.
	res, _ = call(t, ctx, a, 100, ioctl.CmdCRWLWriterEnter, ioctl.CRWL{NCID: 8, UUID: uuid(1)})
	wantErrno(t, "writer enter core 8", res, syscall.EINVAL)
	// Reader of another process: waits for the writer, times out.
	start := time.Now()
	res, _ = call(t, ctx, b, 200, ioctl.CmdCRWLReaderEnter, ioctl.CRWL{NCID: 2, UUID: uuid(1)})
	wantErrno(t, "reader while writer holds", res, syscall.EBUSY)
	if el := time.Since(start); el < crwlReaderWait {
		t.Errorf("reader gave up after %v, want %v", el, crwlReaderWait)
	}
	res, _ = call(t, ctx, a, 100, ioctl.CmdCRWLWriterDowngrade, ioctl.CRWL{NCID: 2, UUID: uuid(9)})
	wantErrno(t, "downgrade wrong uuid", res, syscall.ENOENT)
	res, _ = call(t, ctx, a, 100, ioctl.CmdCRWLWriterDowngrade, ioctl.CRWL{NCID: 2, UUID: uuid(1)})
	wantErrno(t, "downgrade", res, 0)
	res, _ = call(t, ctx, a, 100, ioctl.CmdCRWLWriterDowngrade, ioctl.CRWL{NCID: 2, UUID: uuid(1)})
	wantErrno(t, "downgrade twice", res, syscall.EINVAL)
	// Readers must be the writer process with the writer's model.
	res, _ = call(t, ctx, b, 200, ioctl.CmdCRWLReaderEnter, ioctl.CRWL{NCID: 2, UUID: uuid(1)})
	wantErrno(t, "reader of another pid", res, syscall.ENOENT)
	res, _ = call(t, ctx, a, 100, ioctl.CmdCRWLReaderEnter, ioctl.CRWL{NCID: 2, UUID: uuid(1)})
	wantErrno(t, "reader", res, 0)
	// A writer waits while readers (2 now) exist; one leaving is not enough.
	done := make(chan Result, 1)
	go func() {
		res, _ := call(t, ctx, a, 100, ioctl.CmdCRWLWriterEnter, ioctl.CRWL{NCID: 2, UUID: uuid(1)})
		done <- res
	}()
	time.Sleep(20 * time.Millisecond)
	for i := 0; i < 2; i++ {
		res, _ = call(t, ctx, a, 100, ioctl.CmdCRWLReaderExit, ioctl.CRWL{NCID: 2, UUID: uuid(1)})
		wantErrno(t, "reader exit", res, 0)
	}
	select {
	case res := <-done:
		// Same process, same model: the driver says EALREADY but holds it.
		wantErrno(t, "writer re-enter after readers left", res, syscall.EALREADY)
	case <-time.After(2 * time.Second):
		t.Fatal("writer not woken when the readers left")
	}
	res, _ = call(t, ctx, a, 100, ioctl.CmdCRWLReaderExit, ioctl.CRWL{NCID: 2, UUID: uuid(1)})
	wantErrno(t, "reader exit at zero", res, syscall.EINVAL)

	// The lock shows in GET_ALL_APPS_INFO and goes away with the process.
	d.mu.Lock()
	m, uuids := d.crwl.lockMapLocked(100)
	d.mu.Unlock()
	if m != 1<<2 || uuids[2] != uuid(1) {
		t.Errorf("lock map %#x %v", m, uuids[2])
	}
	a.Flush(context.Background(), Caller{Tgid: 100})
	res, _ = call(t, ctx, b, 200, ioctl.CmdCRWLWriterEnter, ioctl.CRWL{NCID: 2, UUID: uuid(3)})
	wantErrno(t, "writer after the holder's last flush", res, 0)
}

// A FUSE interrupt comes for any signal; the driver's CRWL wait looks at
// none, so the writer keeps waiting and gets the lock when the holder
// leaves, never EINTR.
func TestCRWLWaitIgnoresInterrupts(t *testing.T) {
	d := newTestSystem(t, "trn2.48xlarge").Devices[0]
	a := open(t, d, syscall.O_RDWR, 100)
	b := open(t, d, syscall.O_RDWR, 200)
	call(t, context.Background(), a, 100, ioctl.CmdCRWLWriterEnter, ioctl.CRWL{NCID: 0, UUID: uuid(1)})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // interrupted before it even starts waiting
	done := make(chan Result, 1)
	go func() {
		res, _ := call(t, ctx, b, 200, ioctl.CmdCRWLWriterEnter, ioctl.CRWL{NCID: 0, UUID: uuid(2)})
		done <- res
	}()
	select {
	case res := <-done:
		t.Fatalf("interrupted writer returned %d while the lock was held", res)
	case <-time.After(50 * time.Millisecond):
	}
	a.Flush(context.Background(), Caller{Tgid: 100}) // the holder goes
	select {
	case res := <-done:
		wantErrno(t, "interrupted writer after the holder left", res, 0)
	case <-time.After(crwlWriterWait + 5*time.Second):
		t.Fatal("writer never woken")
	}
}

func TestRangeMark(t *testing.T) {
	s := newTestSystem(t, "trn2.48xlarge")
	ctx := context.Background()
	d1 := s.Devices[1]
	a := open(t, d1, syscall.O_WRONLY, 100)
	b := open(t, s.Devices[1], syscall.O_WRONLY, 200)

	res, v := call(t, ctx, a, 100, ioctl.CmdCRWLNCRangeMark, ioctl.CRWLNCMap{NCCount: 3, StartNCIndex: 0, EndNCIndex: 7})
	wantErrno(t, "mark 3", res, 0)
	if v.Bitmap != 0b111 {
		t.Errorf("bitmap %#b, want 0b111 (device-relative)", v.Bitmap)
	}
	if got := s.cores.owner(8); got != 100 {
		t.Errorf("host-wide core 8 owner %d, want 100", got)
	}
	// 5 free cores left (3..7): 6 cannot be had; the struct still comes back.
	res, ext := call(t, ctx, b, 200, ioctl.CmdCRWLNCRangeMarkExt0, ioctl.CRWLNCMapExt{NCCount: 6, StartNCIndex: 0, EndNCIndex: 7, Bitmap: [8]uint64{0xff}})
	wantErrno(t, "mark 6", res, syscall.EBUSY)
	if ext.MaxNCAvailable != 5 || ext.Bitmap != [8]uint64{} {
		t.Errorf("failed mark: max %d bitmap %#x", ext.MaxNCAvailable, ext.Bitmap)
	}
	res, _ = call(t, ctx, b, 200, ioctl.CmdCRWLNCRangeMark, ioctl.CRWLNCMap{NCCount: 1, StartNCIndex: 5, EndNCIndex: 4})
	wantErrno(t, "start > end", res, syscall.EINVAL)
	res, _ = call(t, ctx, b, 200, ioctl.IOC(ioctl.DirWrite, ioctl.Magic, 85, 24), ioctl.CRWLNCMap{NCCount: 1})
	wantErrno(t, "wrong encoded size", res, syscall.EINVAL)
	// Unmark only frees the caller's own cores.
	res, _ = call(t, ctx, b, 200, ioctl.CmdCRWLNCRangeUnmark, ioctl.CRWLNCMap{Bitmap: 0b111})
	wantErrno(t, "unmark someone else's", res, 0)
	if s.cores.owner(8) != 100 {
		t.Error("another process unmarked a core it does not own")
	}
	// Closing a free-access fd unmarks everything the process marked.
	a.Flush(context.Background(), Caller{Tgid: 100})
	if s.cores.owner(8) != 0 || s.cores.table.count != 0 {
		t.Errorf("after flush: owner %d, count %d", s.cores.owner(8), s.cores.table.count)
	}
}

// The driver's scan jumps to the core after the one that ended a short
// free run, and its loop then steps once more: the core right after the
// blocker is never a start. With core 2 taken, the run 3..7 is not found.
func TestRangeMarkScanQuirk(t *testing.T) {
	var c coreReservations
	var bm [8]uint64
	c.owner[2] = 9 // free: 0,1 | taken: 2 | free: 3..7
	maxRun, errno := c.mark(6, 0, 7, 1, &bm)
	if errno != syscall.EBUSY || maxRun != 4 {
		t.Errorf("mark(6): max %d errno %v, want 4 EBUSY", maxRun, errno)
	}
	if _, errno := c.mark(5, 0, 7, 1, &bm); errno != syscall.EBUSY {
		t.Errorf("mark(5): %v, want EBUSY as the driver gives", errno)
	}
	if _, errno := c.mark(4, 0, 7, 1, &bm); errno != 0 || bm[0] != 0b11110000 {
		t.Errorf("mark(4): %v %#b, want cores 4-7", errno, bm[0])
	}
}

func TestCInit(t *testing.T) {
	d := newTestSystem(t, "trn1.2xlarge").Devices[0]
	ctx := context.Background()
	a := open(t, d, syscall.O_RDWR, 100)
	res, v := call(t, ctx, a, 100, ioctl.CmdCInitSetState, ioctl.CInitSet{NCID: 1, State: cinitStarted})
	if res != 0 || v.NewState != cinitStarted {
		t.Fatalf("first start: %d %d", res, v.NewState)
	}
	done := make(chan uint32)
	go func() {
		_, v := call(t, ctx, a, 200, ioctl.CmdCInitSetState, ioctl.CInitSet{NCID: 1, State: cinitStarted})
		done <- v.NewState
	}()
	time.Sleep(20 * time.Millisecond)
	call(t, ctx, a, 100, ioctl.CmdCInitSetState, ioctl.CInitSet{NCID: 1, State: cinitCompleted})
	select {
	case st := <-done:
		if st != cinitCompleted {
			t.Errorf("second starter saw %d, want completed", st)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("second starter not woken")
	}
	res, _ = call(t, ctx, a, 100, ioctl.CmdCInitSetState, ioctl.CInitSet{NCID: 2, State: cinitStarted})
	wantErrno(t, "core 2 on a 2-core device", res, syscall.E2BIG)
	res, sc := call(t, ctx, a, 100, ioctl.CmdNCModelStartedCount, ioctl.NCModelStartedCount{NCID: 1, StartedCount: 77})
	if res != 0 || sc.StartedCount != 0 {
		t.Errorf("model started count: %d %d", res, sc.StartedCount)
	}
}
