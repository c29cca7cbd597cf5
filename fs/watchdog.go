package fs

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/sirupsen/logrus"
)

// The slow-request log. Every FUSE request on a device node (open, ioctl,
// flush, release) stamps a slot of a fixed array when it starts and clears
// it when it ends; one goroutine scans the array every watchInterval and
// reports, once per request, any that has run longer than the driver's
// budget for it (device.System.Budget), with every goroutine's stack.
//
// The request path does one compare-and-swap and four atomic stores on
// the way in and two atomic operations on the way out: no lock, no timer,
// no allocation.

// watchSlots is how many requests are watched at once. A request that
// finds every slot taken goes unwatched (and is counted): with one FUSE
// request per blocked caller thread, that takes a thousand stuck callers,
// and the first of them have been reported by then.
const watchSlots = 1024

// watchInterval is the watchdog's scan period: a slow request is reported
// at most this long after its budget ran out.
const watchInterval = 100 * time.Millisecond

// minDumpInterval spaces the goroutine dumps of the slow-request log: when
// many callers pile up behind one stuck request, each is reported, and the
// stacks are written again only after this long.
const minDumpInterval = 10 * time.Second

// watchOp is the kind of request a slot holds.
type watchOp uint8

const (
	opIoctl watchOp = iota + 1
	opOpen
	opFlush
	opRelease
)

func (o watchOp) String() string {
	switch o {
	case opIoctl:
		return "ioctl"
	case opOpen:
		return "open"
	case opFlush:
		return "flush"
	case opRelease:
		return "release"
	}
	return "?"
}

// watchSlot is one in-flight request, on a cache line of its own.
type watchSlot struct {
	// start is the request's start (watchdog.now), 0 when the slot is
	// free and -1 while its owner fills in the other fields. Stamps are
	// unique per slot, so a reader that sees the same start before and
	// after reading the fields has read one request's fields.
	start  atomic.Int64
	what   atomic.Uint64 // op<<32 | ioctl command value
	who    atomic.Uint64 // tid<<32 | tgid
	dev    atomic.Int32
	logged atomic.Int64 // the start of the request last reported from this slot
	_      [24]byte
}

// watchdog watches the requests of one mount.
type watchdog struct {
	f         *FS
	epoch     time.Time // carries a monotonic reading: now() is cheap
	slots     [watchSlots]watchSlot
	unwatched atomic.Uint64 // requests that found no free slot
	// budgetHook, when set (tests), rewrites every budget.
	budgetHook atomic.Pointer[func(op string, cmd uint32, budget time.Duration) time.Duration]
	lastDump   time.Time // owned by the scanning goroutine
}

func newWatchdog(f *FS) *watchdog { return &watchdog{f: f, epoch: time.Now()} }

// now is the time since the epoch in nanoseconds, never 0 or negative.
func (w *watchdog) now() int64 { return int64(time.Since(w.epoch)) + 1 }

// begin records the start of a request and returns its slot for end (-1:
// not watched). dev is the device index, tid and tgid the caller.
func (w *watchdog) begin(op watchOp, cmd uint32, dev int, tid, tgid int32) int {
	if w == nil {
		return -1
	}
	now := w.now()
	i := int(uint32(tid) % watchSlots)
	for range watchSlots {
		s := &w.slots[i]
		if s.start.Load() == 0 && s.start.CompareAndSwap(0, -1) {
			s.what.Store(uint64(op)<<32 | uint64(cmd))
			s.who.Store(uint64(uint32(tid))<<32 | uint64(uint32(tgid)))
			s.dev.Store(int32(dev))
			s.start.Store(now)
			return i
		}
		if i++; i == watchSlots {
			i = 0
		}
	}
	w.unwatched.Add(1)
	return -1
}

// end records the end of the request in slot i (from begin).
func (w *watchdog) end(i int) {
	if i < 0 {
		return
	}
	s := &w.slots[i]
	if start := s.start.Load(); s.logged.Load() == start {
		// Reported as slow: say how it ended, once more.
		w.finished(s, start)
	}
	s.start.Store(0)
}

// run scans every watchInterval until done is closed.
func (w *watchdog) run(done <-chan struct{}) {
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			w.scan()
		}
	}
}

// slowRequest is what a scan found about one request.
type slowRequest struct {
	op      watchOp
	cmd     uint32
	dev     int
	tid     int32
	tgid    int32
	elapsed time.Duration
	budget  time.Duration
}

// scan reports each request that has outrun its budget and was not
// reported yet, then the goroutine stacks.
func (w *watchdog) scan() {
	now := w.now()
	var slow []slowRequest
	for i := range w.slots {
		s := &w.slots[i]
		start := s.start.Load()
		if start <= 0 || s.logged.Load() == start {
			continue
		}
		r := w.read(s)
		if s.start.Load() != start {
			continue // ended (or replaced) while being read
		}
		r.elapsed = time.Duration(now - start)
		if r.budget = w.budget(r.op, r.cmd); r.elapsed <= r.budget {
			continue
		}
		s.logged.Store(start)
		slow = append(slow, r)
	}
	if len(slow) == 0 {
		return
	}
	for _, r := range slow {
		f := w.fields(r)
		w.blockedFields(f, r)
		w.f.log.WithFields(f).Warn("slow request")
	}
	if !w.lastDump.IsZero() && time.Since(w.lastDump) < minDumpInterval {
		w.f.log.WithField("last_dump", w.lastDump.Format(time.RFC3339Nano)).Warn("slow request: goroutines dumped less than " + minDumpInterval.String() + " ago, not again")
		return
	}
	w.lastDump = time.Now()
	logDump(w.f.log, "slow request", false)
}

func (w *watchdog) read(s *watchSlot) slowRequest {
	what, who := s.what.Load(), s.who.Load()
	return slowRequest{
		op:   watchOp(what >> 32),
		cmd:  uint32(what),
		dev:  int(s.dev.Load()),
		tid:  int32(who >> 32),
		tgid: int32(uint32(who)),
	}
}

// finished logs the end of a request reported as slow.
func (w *watchdog) finished(s *watchSlot, start int64) {
	r := w.read(s)
	r.elapsed = time.Duration(w.now() - start)
	r.budget = w.budget(r.op, r.cmd)
	w.f.log.WithFields(w.fields(r)).Warn("slow request finished")
}

// budget is how long a request may run before it is reported.
func (w *watchdog) budget(op watchOp, cmd uint32) time.Duration {
	sys := w.f.sys
	var b time.Duration
	switch op {
	case opIoctl:
		b = sys.Budget(cmd)
	case opOpen:
		b = sys.OpenBudget()
	case opFlush:
		b = sys.FlushBudget()
	default:
		b = sys.ReleaseBudget()
	}
	if h := w.budgetHook.Load(); h != nil {
		b = (*h)(op.String(), cmd, b)
	}
	return b
}

// fields are the structured fields of a slow-request log line.
func (w *watchdog) fields(r slowRequest) logrus.Fields {
	name := r.op.String()
	if r.op == opIoctl {
		if name = w.f.sys.CommandName(r.cmd); name == "" {
			name = "unknown"
		}
	}
	f := logrus.Fields{
		"op":      r.op.String(),
		"command": name,
		"tid":     r.tid,
		"tgid":    r.tgid,
		"elapsed": r.elapsed.Round(time.Millisecond).String(),
		"budget":  r.budget.Round(time.Millisecond).String(),
	}
	if r.op == opIoctl {
		f["cmd"] = fmt.Sprintf("%#08x", r.cmd)
	}
	if r.dev >= 0 && r.dev < len(w.f.sys.Devices) {
		f["device"] = w.f.sys.Devices[r.dev].Name()
	}
	if n := w.unwatched.Load(); n > 0 {
		f["unwatched"] = n
	}
	return f
}

// callerTid is the task id a FUSE request carries (0 for the kernel's own).
func callerTid(ctx context.Context) int32 {
	if c, ok := fuse.FromContext(ctx); ok {
		return int32(c.Pid)
	}
	return 0
}
