package fs

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/internal/procfs"
)

// On a plain mount (and host mode) FUSE never sees a client's mmap: the
// passthrough open handed the kernel the physical-memory file, and a
// FUSE inode has one backing file for every open (so no opener can get a
// restricted one). The driver's rule for a range no chunk covers
// (CAP_SYS_RAWIO in the initial user namespace) cannot refuse the mmap
// there. What it protects against can be had instead: raw memory (see
// device/rawmem.go) that no mapping of a task holding CAP_SYS_RAWIO
// covers is punched, at the release of a device file (a process's last
// reference, its mappings gone) and before the memory limit refuses a
// write (a process's write waits for the pass and is tried again). So a
// process without the capability never keeps host RAM past the next
// release or refusal, its pages never outlive it, and they never stand
// between another process's write and the limit. Under run
// the supervisor refuses such mmaps outright (CheckMmap); the reaper runs
// there too, for DMA writes to raw addresses.

// rawReaper runs the passes one at a time, on demand. It is the memory
// limit's device.Reclaimer.
type rawReaper struct {
	f    *FS
	kick chan struct{}      // one pending pass at most
	req  chan chan struct{} // a pass to wait for: closed when one ran after the request
	stop chan struct{}
	done chan struct{}
	once sync.Once
	// scanning is set while a scan of /proc runs (scanRawIOMappings).
	scanning atomic.Bool
}

// startRawReaper starts the passes; kicks before it are dropped.
func (f *FS) startRawReaper() {
	r := &rawReaper{f: f, kick: make(chan struct{}, 1), req: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	f.reaper.Store(r)
	f.sys.SetReclaimer(r)
	go r.run()
}

// rawReapInterval keeps kicked passes apart: each may read the maps of
// every capable process, and releases can come in a stream. A pass
// someone waits for (Reclaim) runs at once.
const rawReapInterval = time.Second

func (r *rawReaper) run() {
	defer close(r.done)
	var last time.Time
	for {
		var waiting []chan struct{}
		select {
		case <-r.stop:
			return
		case <-r.kick:
			if wait := time.Until(last.Add(rawReapInterval)); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-r.stop:
					t.Stop()
					return
				case <-t.C:
				case w := <-r.req:
					t.Stop()
					waiting = append(waiting, w)
				}
			}
		case w := <-r.req:
			waiting = append(waiting, w)
		}
		// Requests that came meanwhile share the pass.
		for more := true; more; {
			select {
			case w := <-r.req:
				waiting = append(waiting, w)
			default:
				more = false
			}
		}
		r.f.reapRaw()
		last = time.Now()
		for _, w := range waiting {
			close(w)
		}
	}
}

// Kick asks for a pass; it never blocks and takes no lock.
func (r *rawReaper) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Reclaim returns after a pass that started after the call, at once if
// the reaper has stopped, and after the driver's budget at most: a pass
// reads other processes' /proc files, which an unrelated hang can stall.
func (r *rawReaper) Reclaim() {
	w := make(chan struct{})
	budget := time.NewTimer(r.f.defaultBudget)
	defer budget.Stop()
	select {
	case r.req <- w:
	case <-r.stop:
		return
	case <-budget.C:
		return
	}
	select {
	case <-w:
	case <-r.done:
	case <-budget.C:
	}
}

// kickRawReap asks for a pass, if the reaper runs.
func (f *FS) kickRawReap() {
	if r := f.reaper.Load(); r != nil {
		r.Kick()
	}
}

// stopRawReaper ends the passes and waits for the one under way.
func (f *FS) stopRawReaper() {
	if r := f.reaper.Load(); r != nil {
		r.f.sys.SetReclaimer(nil)
		r.once.Do(func() { close(r.stop) })
		<-r.done
	}
}

// reapRaw is one pass: when some device's backing holds raw memory, it
// finds what mappings of tasks holding CAP_SYS_RAWIO cover and punches
// the rest. A pass whose scan of /proc fails or outlasts its deadline
// punches nothing.
func (f *FS) reapRaw() {
	held := false
	for _, d := range f.sys.Devices {
		if d.RawHeld() > 0 {
			held = true
			break
		}
	}
	if !held {
		return
	}
	keep, ok := f.scanRawIOMappings()
	if !ok {
		return
	}
	for _, d := range f.sys.Devices {
		if n := d.ReapRaw(keep[d.Index]); n > 0 {
			f.log.WithFields(logrus.Fields{"device": d.Index, "bytes": n}).Debug("raw memory no CAP_SYS_RAWIO mapping holds punched")
		}
	}
}

// scanRawIOMappings is rawIOMappings with a deadline: reading a process's
// maps takes its mm lock on older kernels, where a process stuck in a
// page fault elsewhere can stall it for good. A scan that outlasts the
// deadline is abandoned (it finishes on its own, touching nothing
// shared), and so is the pass while the previous scan still runs.
func (f *FS) scanRawIOMappings() (map[int][]device.RawRange, bool) {
	r := f.reaper.Load()
	if r == nil || !r.scanning.CompareAndSwap(false, true) {
		return nil, false
	}
	type result struct {
		keep map[int][]device.RawRange
		err  error
	}
	done := make(chan result, 1)
	go func() {
		defer r.scanning.Store(false)
		keep, err := f.rawIOMappings()
		done <- result{keep, err}
	}()
	deadline := time.NewTimer(rawScanBudget * f.defaultBudget)
	defer deadline.Stop()
	select {
	case res := <-done:
		if res.err != nil {
			f.log.WithError(res.err).Debug("raw memory left alone")
			return nil, false
		}
		return res.keep, true
	case <-deadline.C:
		f.log.Warn("raw memory left alone: reading the processes' memory maps outlasted its deadline")
		return nil, false
	}
}

// rawScanBudget is how many of the driver's default budgets a scan of
// every process's maps may take.
const rawScanBudget = 4

// rawIOMappings lists, per device, the physical ranges that mappings of
// processes holding CAP_SYS_RAWIO (in the initial user namespace) cover.
// The daemon's own windows of the files are not clients' mappings.
func (f *FS) rawIOMappings() (map[int][]device.RawRange, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	keep := map[int][]device.RawRange{}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// The capability first: only a capable process's mappings count,
		// and its status is read without its mm lock.
		if pid != self && !capable(int32(pid), unix.CAP_SYS_RAWIO) {
			continue
		}
		ms, err := procfs.Mappings(pid)
		if err != nil {
			continue // gone
		}
		for _, m := range ms {
			dev, ok := f.deviceOf(m)
			if !ok || (pid == self && f.sys.Devices[dev].Chip().Mem().Maps(m.Start)) {
				continue
			}
			keep[dev] = append(keep[dev], device.RawRange{Start: m.Offset, End: m.Offset + m.End - m.Start})
		}
	}
	return keep, nil
}
