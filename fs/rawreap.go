package fs

import (
	"os"
	"strconv"
	"sync"

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
// reference, its mappings gone) and whenever the memory limit refuses a
// write. So a process without the capability never keeps host RAM past
// the next release or refusal, its pages never outlive it, and they
// never stand between another process's write and the limit. Under run
// the supervisor refuses such mmaps outright (CheckMmap); the reaper runs
// there too, for DMA writes to raw addresses.

// rawReaper runs the passes one at a time, on demand.
type rawReaper struct {
	kick chan struct{} // one pending pass at most
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// startRawReaper starts the passes; kicks before it are dropped.
func (f *FS) startRawReaper() {
	r := &rawReaper{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	f.reaper.Store(r)
	f.sys.OnWriteRefused(f.kickRawReap)
	go func() {
		defer close(r.done)
		for {
			select {
			case <-r.stop:
				return
			case <-r.kick:
				f.reapRaw()
			}
		}
	}()
}

// kickRawReap asks for a pass; it never blocks and takes no lock.
func (f *FS) kickRawReap() {
	if r := f.reaper.Load(); r != nil {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
}

// stopRawReaper ends the passes and waits for the one under way.
func (f *FS) stopRawReaper() {
	if r := f.reaper.Load(); r != nil {
		r.once.Do(func() { close(r.stop) })
		<-r.done
	}
}

// reapRaw is one pass: when some device's backing holds raw memory, it
// finds what mappings of tasks holding CAP_SYS_RAWIO cover and punches
// the rest.
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
	keep := f.rawIOMappings()
	for _, d := range f.sys.Devices {
		if n := d.ReapRaw(keep[d.Index]); n > 0 {
			f.log.WithFields(logrus.Fields{"device": d.Index, "bytes": n}).Debug("raw memory no CAP_SYS_RAWIO mapping holds punched")
		}
	}
}

// rawIOMappings lists, per device, the physical ranges that mappings of
// processes holding CAP_SYS_RAWIO (in the initial user namespace) cover.
// The daemon's own windows of the files are not clients' mappings.
func (f *FS) rawIOMappings() map[int][]device.RawRange {
	keep := map[int][]device.RawRange{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return keep
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ms, err := procfs.Mappings(pid)
		if err != nil {
			continue // gone, or not ours to read
		}
		judged, rawio := false, false
		for _, m := range ms {
			dev, ok := f.deviceOf(m)
			if !ok || (pid == self && f.sys.Devices[dev].Chip().Mem().Maps(m.Start)) {
				continue
			}
			if !judged {
				judged, rawio = true, capable(int32(pid), unix.CAP_SYS_RAWIO)
			}
			if !rawio {
				break
			}
			keep[dev] = append(keep[dev], device.RawRange{Start: m.Offset, End: m.Offset + m.End - m.Start})
		}
	}
	return keep
}
