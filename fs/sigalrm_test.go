package fs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	goruntime "runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

// The driver's signal semantics from a Go caller (the daemon serves in
// this same process): copies, memsets, async waits, scrub waits, CRWL
// waits, DMA doorbells and reset waits never return EINTR whatever
// signals arrive; a reset-ready wait ends early, with result -EINTR in its
// struct, only when SIGTERM or SIGKILL is pending in the calling thread's
// own set (neuron_reset.c nr_wait checks current->pending.signal).

// sigevent is the kernel's struct sigevent (64 bytes) for a timer that
// signals one thread (SIGEV_THREAD_ID).
type sigevent struct {
	value  uint64
	signo  int32
	notify int32
	tid    int32
	_      [11]int32
}

const sigevThreadID = 4

// threadAlarm sends SIGALRM to thread tid every period, from a kernel
// timer (timer_create with SIGEV_THREAD_ID), until stop is called. Unlike
// ITIMER_REAL, whose signal goes to whichever thread of this busy process
// the kernel picks, it hits the thread that makes the calls.
// It may run on any goroutine, so it returns an error instead of failing
// the test.
func threadAlarm(tid int, period time.Duration) (stop func(), err error) {
	ev := sigevent{signo: int32(unix.SIGALRM), notify: sigevThreadID, tid: int32(tid)}
	var id int32
	if _, _, e := unix.Syscall(unix.SYS_TIMER_CREATE, unix.CLOCK_MONOTONIC, uintptr(unsafe.Pointer(&ev)), uintptr(unsafe.Pointer(&id))); e != 0 {
		return nil, fmt.Errorf("timer_create: %w", e)
	}
	spec := unix.ItimerSpec{Interval: unix.NsecToTimespec(period.Nanoseconds()), Value: unix.NsecToTimespec(period.Nanoseconds())}
	if _, _, e := unix.Syscall6(unix.SYS_TIMER_SETTIME, uintptr(id), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0); e != 0 {
		unix.Syscall(unix.SYS_TIMER_DELETE, uintptr(id), 0, 0)
		return nil, fmt.Errorf("timer_settime: %w", e)
	}
	var once sync.Once
	return func() {
		once.Do(func() { unix.Syscall(unix.SYS_TIMER_DELETE, uintptr(id), 0, 0) })
	}, nil
}

// catchSIGALRM makes SIGALRM harmless for this process (a drained
// signal.Notify channel) and counts it; at the end of the test SIGALRM
// is ignored, so that a signal still in flight cannot kill the binary.
func catchSIGALRM(t *testing.T) *atomic.Int64 {
	ch := make(chan os.Signal, 64)
	signal.Notify(ch, unix.SIGALRM)
	n := new(atomic.Int64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range ch {
			n.Add(1)
		}
	}()
	t.Cleanup(func() {
		signal.Ignore(unix.SIGALRM)
		signal.Stop(ch)
		close(ch)
		<-done
	})
	return n
}

// processAlarm is ITIMER_REAL every period, as the C clients use it.
func processAlarm(t *testing.T, period time.Duration) (stop func()) {
	tv := unix.NsecToTimeval(period.Nanoseconds())
	if _, err := unix.Setitimer(unix.ItimerReal, unix.Itimerval{Interval: tv, Value: tv}); err != nil {
		t.Fatal(err)
	}
	return func() { unix.Setitimer(unix.ItimerReal, unix.Itimerval{}) }
}

// callStats counts, per command, calls, EINTRs and other failures.
type callStats struct {
	mu    sync.Mutex
	calls map[string]*[3]int
	first []string
}

func (s *callStats) note(name string, r int, e unix.Errno, okErrno unix.Errno) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = map[string]*[3]int{}
	}
	c := s.calls[name]
	if c == nil {
		c = new([3]int)
		s.calls[name] = c
	}
	c[0]++
	switch {
	case e == unix.EINTR:
		c[1]++
	case r != 0 && !(e != 0 && e == okErrno):
		c[2]++
	default:
		return true
	}
	if len(s.first) < 10 {
		s.first = append(s.first, fmt.Sprintf("%s: ioctl = %d, %v", name, r, e))
	}
	return false
}

// call issues a counted command; okErrno is an errno that counts as
// success (EALREADY for another thread's writer of a loaded model).
func call[T any](s *callStats, fd int, name string, cmd uint32, arg *T, okErrno unix.Errno) bool {
	r, e := testutil.Ioctl(fd, cmd, arg)
	return s.note(name, r, e, okErrno)
}

// err counts a runtime call's error.
func (s *callStats) err(name string, err error) bool {
	var re *runtime.Error
	switch {
	case err == nil:
		return s.note(name, 0, 0, 0)
	case errors.As(err, &re) && re.Errno != 0:
		return s.note(name, -1, unix.Errno(re.Errno), 0)
	default:
		return s.note(name, 1, 0, 0)
	}
}

func (s *callStats) report() (string, int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for n := range s.calls {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	eintr, other := 0, 0
	for _, n := range names {
		c := s.calls[n]
		fmt.Fprintf(&b, "%-24s calls %6d  EINTR %5d  other failures %d\n", n, c[0], c[1], c[2])
		eintr += c[1]
		other += c[2]
	}
	for _, f := range s.first {
		b.WriteString("  " + f + "\n")
	}
	return b.String(), eintr, other
}

// sigResetMap is a trn2.3xlarge core no other command here uses.
const sigResetMap = 1 << 7

func crwlArg(model string) *ioctl.CRWL {
	v := &ioctl.CRWL{NCID: 0}
	copy(v.UUID.Value[:], model)
	return v
}

// A Go caller whose thread gets SIGALRM every 100 us (a thread-directed
// timer, plus ITIMER_REAL for the process, besides the runtime's own
// SIGURG) sees no EINTR from any long or blocking command, and every copy
// has landed when its wait returns.
func TestSIGALRMNoEINTR(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.3xlarge")
	d, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	fd := d.Fd()
	const big, dmaBytes = 2 << 20, 1 << 20
	devMem := mustMem(t, d, big, runtime.AllocOptions{})
	dev2 := mustMem(t, d, big, runtime.AllocOptions{})
	host := mustMem(t, d, big, runtime.AllocOptions{Host: true})
	dmaDst := mustMem(t, d, dmaBytes, runtime.AllocOptions{})
	marker, err := d.NewMarker()
	if err != nil {
		t.Fatal(err)
	}
	defer marker.Close()
	q, err := d.InitQueue(2, 3, 64, runtime.AllocOptions{Host: true}) // an engine of core 0
	if err != nil {
		t.Fatal(err)
	}
	// Buffers outside the Go heap: their addresses sit in structs as
	// plain integers.
	u1, err := testutil.OffHeap(big)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(u1)
	u2, err := testutil.OffHeap(big)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(u2)
	const model = "go sigalrm model"
	var st callStats
	// The lock's first writer, so that readers find the model.
	if !call(&st, fd, "CRWL_WRITER_ENTER", ioctl.CmdCRWLWriterEnter, crwlArg(model), unix.EALREADY) ||
		!call(&st, fd, "CRWL_WRITER_DOWNGRADE", ioctl.CmdCRWLWriterDowngrade, crwlArg(model), 0) ||
		!call(&st, fd, "CRWL_READER_EXIT", ioctl.CmdCRWLReaderExit, crwlArg(model), 0) {
		t.Fatalf("CRWL setup failed: %+v", st.first)
	}
	alarms := catchSIGALRM(t)
	stopProcess := processAlarm(t, 100*time.Microsecond)
	defer stopProcess()

	writerCycle := func(hold time.Duration) {
		if !call(&st, fd, "CRWL_WRITER_ENTER", ioctl.CmdCRWLWriterEnter, crwlArg(model), unix.EALREADY) {
			return
		}
		time.Sleep(hold)
		if call(&st, fd, "CRWL_WRITER_DOWNGRADE", ioctl.CmdCRWLWriterDowngrade, crwlArg(model), 0) {
			call(&st, fd, "CRWL_READER_EXIT", ioctl.CmdCRWLReaderExit, crwlArg(model), 0)
		}
	}
	readerCycle := func(hold time.Duration) {
		if call(&st, fd, "CRWL_READER_ENTER", ioctl.CmdCRWLReaderEnter, crwlArg(model), 0) {
			time.Sleep(hold)
			call(&st, fd, "CRWL_READER_EXIT", ioctl.CmdCRWLReaderExit, crwlArg(model), 0)
		}
	}

	// A second thread keeps the model lock busy so that the caller's
	// enters wait.
	stopHolder := make(chan struct{})
	holderDone := make(chan struct{})
	go func() {
		defer close(holderDone)
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		stop, err := threadAlarm(unix.Gettid(), 100*time.Microsecond)
		if err != nil {
			st.note("timer for the holder: "+err.Error(), 1, 0, 0)
			return
		}
		defer stop()
		for {
			select {
			case <-stopHolder:
				return
			default:
			}
			writerCycle(300 * time.Microsecond)
			time.Sleep(50 * time.Microsecond)
			readerCycle(300 * time.Microsecond)
			time.Sleep(50 * time.Microsecond)
		}
	}()

	var bad []string
	landed := func(m *runtime.Mem, size int, v byte, after string) {
		got := u2[:size]
		if !call(&st, fd, "MEM_BUF_COPY64 from", ioctl.CmdMemBufCopy64, &ioctl.MemBufCopy64{MemHandle: m.Handle, Buffer: uint64(testutil.AddrOf(got)), Size: uint64(size)}, 0) {
			return
		}
		if bytes.Count(got, []byte{v}) != size && len(bad) < 5 {
			i := bytes.IndexFunc(got, func(r rune) bool { return r != rune(v) })
			bad = append(bad, fmt.Sprintf("after %s: byte %d is %#x, want %#x: the copy had not landed", after, i, got[i], v))
		}
	}
	iterations := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		stop, err := threadAlarm(unix.Gettid(), 100*time.Microsecond)
		if err != nil {
			st.note("timer for the caller: "+err.Error(), 1, 0, 0)
			return
		}
		defer stop()
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
			iterations++
			v := byte(iterations*7 + 1)

			// Buffer copies both ways.
			for i := 0; i < 4096; i++ {
				u1[i] = byte(i*13 + iterations)
			}
			for i := 4096; i < len(u1); i *= 2 {
				copy(u1[i:], u1[:i])
			}
			if call(&st, fd, "MEM_BUF_COPY64 to", ioctl.CmdMemBufCopy64, &ioctl.MemBufCopy64{MemHandle: devMem.Handle, Buffer: uint64(testutil.AddrOf(u1)), Size: big, CopyToMemHandle: 1}, 0) &&
				call(&st, fd, "MEM_BUF_COPY64 from", ioctl.CmdMemBufCopy64, &ioctl.MemBufCopy64{MemHandle: devMem.Handle, Buffer: uint64(testutil.AddrOf(u2)), Size: big}, 0) &&
				!bytes.Equal(u1, u2) && len(bad) < 5 {
				bad = append(bad, "MEM_BUF_COPY64 round trip differs")
			}

			// MEMSET64 and MEM_COPY64.
			memset := func(m *runtime.Mem, size uint64, v byte) bool {
				return call(&st, fd, "MEMSET64", ioctl.CmdMemset64, &ioctl.Memset64{MemHandle: m.Handle, Size: size, Value: uint32(v)}, 0)
			}
			memset(host, big, v)
			if call(&st, fd, "MEM_COPY64", ioctl.CmdMemCopy64, &ioctl.MemCopy64{SrcMemHandle: host.Handle, DstMemHandle: dev2.Handle, Size: big}, 0) {
				landed(dev2, big, v, "MEM_COPY64")
			}

			// An async copy and its wait, then two chained.
			copyAsync := func(srcOff, dstOff, size uint64, prev int32) (uint32, bool) {
				a := &ioctl.MemCopyAsync64{SrcMemHandle: host.Handle, DstMemHandle: devMem.Handle, Size: size, SrcOffset: srcOff, DstOffset: dstOff, PwaitHandle: uint32(prev)}
				ok := call(&st, fd, "MEM_COPY_ASYNC64", ioctl.CmdMemCopyAsync64, a, 0)
				return a.WaitHandle, ok
			}
			wait := func(h uint32) bool {
				return call(&st, fd, "MEM_COPY_ASYNC_WAIT", ioctl.CmdMemCopyAsyncWait, &ioctl.MemCopyAsyncWait{SrcMemHandle: host.Handle, DstMemHandle: devMem.Handle, PwaitHandle: h}, 0)
			}
			memset(devMem, big, 0)
			if h, ok := copyAsync(0, 0, big, -1); ok && wait(h) {
				landed(devMem, big, v, "MEM_COPY_ASYNC_WAIT")
			}
			memset(devMem, big, 0)
			if h1, ok := copyAsync(0, 0, big/2, -1); ok {
				if h2, ok := copyAsync(big/2, big/2, big/2, int32(h1)); ok && wait(h2) {
					landed(devMem, big, v, "chained MEM_COPY_ASYNC64 and MEM_COPY_ASYNC_WAIT")
				}
			}

			// The caller's own DMA queue.
			memset(dmaDst, dmaBytes, 0)
			copies := append(pieces(host.PA, dmaDst.PA, dmaBytes), marker.Copy())
			if st.err("DMA_COPY_DESCRIPTORS64", q.WriteDescriptors(q.Descriptors(copies))) &&
				st.err("DMA_QUEUE_COPY_START", q.Start(uint32(len(copies)))) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := marker.Wait(ctx)
				cancel()
				if err == nil {
					landed(dmaDst, dmaBytes, v, "DMA_QUEUE_COPY_START")
				} else if len(bad) < 5 {
					bad = append(bad, "DMA queue: the completion marker never landed")
				}
			}

			// HBM scrub of a channel no data lives on.
			if call(&st, fd, "HBM_SCRUB_START", ioctl.CmdHBMScrubStart, &ioctl.HBMScrubStart{HBMIndex: 1}, 0) {
				call(&st, fd, "HBM_SCRUB_WAIT", ioctl.CmdHBMScrubWait, &ioctl.HBMScrubWait{HBMIndex: 1}, 0)
			}

			// A core reset and its wait.
			rs := &ioctl.DeviceReset{NCMap: sigResetMap}
			if call(&st, fd, "NC_RESET", ioctl.CmdNCReset, rs, 0) {
				rd := &ioctl.DeviceReady{RequestID: rs.RequestID, Result: 7}
				if call(&st, fd, "NC_RESET_READY", ioctl.CmdNCResetReady, rd, 0) && rd.Result != 0 {
					st.note("NC_RESET_READY result", int(rd.Result), 0, 0)
				}
			}

			// The model lock, against the holder thread.
			readerCycle(0)
			writerCycle(0)
		}
	}()
	<-done
	close(stopHolder)
	<-holderDone
	stopProcess()
	report, eintr, other := st.report()
	for _, b := range bad {
		t.Error(b)
	}
	if eintr != 0 || other != 0 || iterations == 0 {
		t.Errorf("%d EINTR and %d other failures in %d iterations under a 100 us SIGALRM timer (%d SIGALRMs seen by os/signal), want none:\n%s", eintr, other, iterations, alarms.Load(), report)
	} else {
		t.Logf("%d iterations, %d SIGALRMs seen by os/signal\n%s", iterations, alarms.Load(), report)
	}
}

// With SIGTERM pending in the calling thread's own set (blocked there and
// sent with tgkill), NC_RESET_READY returns 0 at once with result -EINTR
// and leaves the request queued for the next wait, which reaps it;
// DEVICE_READY returns 0 with the byte 0. So it is too when SIGALRMs keep
// arriving meanwhile. The emulated reset takes 500 ms (100 ms scaled by
// 5), inside the driver's budget (1 s scaled: 5 s), so it is still
// running when the wait begins.
func TestResetReadySIGTERMPending(t *testing.T) {
	dir, _ := testutil.MountConfig(t, device.Config{Instance: "trn2.3xlarge", TimeScale: 5})
	fd := openDev(t, dir, 0, unix.O_RDWR)
	const latency = 500 * time.Millisecond
	catchSIGALRM(t)
	terms := make(chan os.Signal, 4)
	signal.Notify(terms, unix.SIGTERM)
	defer signal.Stop(terms)

	for _, alarm := range []bool{false, true} {
		name := "quiet"
		if alarm {
			name = "with SIGALRM every 100us"
		}
		t.Run(name, func(t *testing.T) {
			errs := make(chan string, 16)
			done := make(chan struct{})
			go func() {
				defer close(done)
				// The thread ends with the goroutine: its signal mask
				// and anything still pending go with it.
				goruntime.LockOSThread()
				tid := unix.Gettid()
				if alarm {
					stop, err := threadAlarm(tid, 100*time.Microsecond)
					if err != nil {
						errs <- err.Error()
						return
					}
					defer stop()
				}
				var term unix.Sigset_t
				term.Val[(unix.SIGTERM-1)/64] |= 1 << ((unix.SIGTERM - 1) % 64)
				// pend blocks SIGTERM here and sends it to this thread.
				pend := func() {
					unix.PthreadSigmask(unix.SIG_BLOCK, &term, nil)
					unix.Tgkill(unix.Getpid(), tid, unix.SIGTERM)
				}
				// take unblocks SIGTERM and waits for os/signal to get it.
				take := func(what string) {
					unix.PthreadSigmask(unix.SIG_UNBLOCK, &term, nil)
					select {
					case <-terms:
					case <-time.After(10 * time.Second):
						errs <- what + ": the pending SIGTERM never arrived"
					}
				}

				for attempt := 1; ; attempt++ {
					rs := ioctl.DeviceReset{NCMap: sigResetMap}
					if r, e := testutil.Ioctl(fd, ioctl.CmdNCReset, &rs); r != 0 || e != 0 {
						errs <- fmt.Sprintf("NC_RESET: %d, %v", r, e)
						return
					}
					started := time.Now()
					pend()
					rd := ioctl.DeviceReady{RequestID: rs.RequestID, Result: 7}
					lag := time.Since(started)
					r, e := testutil.Ioctl(fd, ioctl.CmdNCResetReady, &rd)
					take("NC_RESET_READY")
					if r == 0 && e == 0 && rd.Result == 0 && lag >= latency && attempt < 3 {
						continue // the reset may have ended before the wait began
					}
					if r != 0 || e != 0 || rd.Result != -int32(unix.EINTR) {
						errs <- fmt.Sprintf("NC_RESET_READY with SIGTERM pending in the thread: ioctl = %d, %v, result %d; want 0, result %d (-EINTR)", r, e, rd.Result, -int32(unix.EINTR))
						break
					}
					// The driver leaves the request queued: this wait finds it.
					rd = ioctl.DeviceReady{RequestID: rs.RequestID, Result: 7}
					if r, e := testutil.Ioctl(fd, ioctl.CmdNCResetReady, &rd); r != 0 || e != 0 || rd.Result != 0 {
						errs <- fmt.Sprintf("reaping the interrupted request: ioctl = %d, %v, result %d; want 0, result 0", r, e, rd.Result)
					}
					break
				}

				// The deprecated pair.
				pend()
				r, e := testutil.Ioctl[struct{}](fd, ioctl.CmdDeviceReset, nil)
				ready := uint8(9)
				r2, e2 := testutil.Ioctl(fd, ioctl.CmdDeviceReady, &ready)
				take("DEVICE_READY")
				if r != 0 || e != 0 || r2 != 0 || e2 != 0 || ready != 0 {
					errs <- fmt.Sprintf("DEVICE_RESET %d, %v; DEVICE_READY with SIGTERM pending in the thread: ioctl = %d, %v, byte %d; want 0, byte 0", r, e, r2, e2, ready)
				}
				ready = 9
				if r, e := testutil.Ioctl(fd, ioctl.CmdDeviceReady, &ready); r != 0 || e != 0 || ready != 1 {
					errs <- fmt.Sprintf("DEVICE_READY after the signal: ioctl = %d, %v, byte %d; want 0, byte 1", r, e, ready)
				}
			}()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("the reset waits did not end within a minute")
			}
			close(errs)
			for e := range errs {
				t.Error(e)
			}
		})
	}
}
