package device

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/chip"
	"github.com/neuronfs/neuronfs/internal/lockrank"
	"github.com/neuronfs/neuronfs/internal/procfs"
)

// Backing says where the devices' physical memory lives (the chip's).
type Backing = chip.Backing

// BackingEnv names the environment variable that gives the default
// backing (the suite runs once on each).
const BackingEnv = "NEURONFS_MEMORY_BACKING"

// ParseBacking reads a --memory-backing value: memfd, file:DIR or
// store:DIR (file backing always through the compact store).
func ParseBacking(s string) (Backing, error) {
	kind, path, _ := strings.Cut(s, ":")
	switch {
	case s == "" || s == "memfd":
		return Backing{}, nil
	case (kind == "file" || kind == "store") && path != "":
		dir, err := filepath.Abs(path)
		if err != nil {
			return Backing{}, fmt.Errorf("memory backing %s: %w", s, err)
		}
		st, err := os.Stat(dir)
		if err != nil {
			return Backing{}, fmt.Errorf("memory backing %s: %w", s, err)
		}
		if !st.IsDir() {
			return Backing{}, fmt.Errorf("memory backing %s: not a directory", s)
		}
		return Backing{Dir: dir, Compact: kind == "store"}, nil
	}
	return Backing{}, fmt.Errorf("memory backing %q: want memfd, file:DIR or store:DIR", s)
}

// memLimit caps what the backing files hold. Allocations never see it, as
// the driver's would not: a write by the daemon (a copy, a memset, a DMA
// transfer) that would make the memfds hold more than the limit fails
// instead, the way that path fails on hardware. Writes to memory that is
// already held cost one mincore over the range and nothing else.
//
// File backing has no limit by default: the kernel writes cold pages back
// and reclaims them. With a limit, the daemon drops its own mappings of
// the files whenever its resident set passes the limit (noteAccess), so
// the pages it reached are the kernel's to reclaim, not the daemon's RSS. Every write
// that brings new pages reserves them first (fallocate), so a full disk
// fails the write instead of raising SIGBUS in the daemon.
type memLimit struct {
	limit uint64 // bytes; 0: none
	file  bool

	mu        lockrank.Mutex[lockrank.MemLimit]
	refused   map[[2]int32]bool // (device, process) already logged
	accessed  atomic.Uint64     // bytes reached through the windows (file backing)
	reclaimer Reclaimer         // see SetReclaimer
}

// Reclaimer frees what the backing holds that nothing needs (raw memory,
// rawmem.go), so that a write the limit refuses may fit after all.
// Reclaim returns when it is done, and is called holding no lock; Kick
// only asks for it, never blocks and takes no lock.
type Reclaimer interface {
	Reclaim()
	Kick()
}

// SetReclaimer gives the limit its reclaimer (nil: none).
func (s *System) SetReclaimer(r Reclaimer) {
	s.memLimit.mu.Lock()
	defer s.memLimit.mu.Unlock()
	s.memLimit.reclaimer = r
}

func (l *memLimit) getReclaimer() Reclaimer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reclaimer
}

// refusedLogMax bounds the once-per-process log memory.
const refusedLogMax = 4096

// trimStep is how much a file-backed daemon reaches between checks of its
// resident set against the limit.
func (l *memLimit) trimStep() uint64 { return min(l.limit/4, 256<<20) }

// defaultMemfdLimit is the limit a memfd backing gets unless told: half
// of the host's RAM, which leaves the rest to the programs being served.
func defaultMemfdLimit() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit) / 2
}

func (l *memLimit) init(b Backing, limit int64) {
	l.file, l.refused = b.Dir != "", map[[2]int32]bool{}
	switch {
	case limit > 0:
		l.limit = uint64(limit)
	case limit == 0 && !l.file:
		l.limit = defaultMemfdLimit()
	}
}

// MemoryLimit reports the limit in bytes (0: none) and the backing.
func (s *System) MemoryLimit() (uint64, Backing) { return s.memLimit.limit, s.backing }

// admitWrite reports whether the daemon may write [pa, pa+n) of d's
// physical memory on behalf of process tgid (0: a DMA engine), reserving
// what the file does not hold yet. A write the limit refuses gets a
// second chance after the reclaimer has punched raw memory (rawmem.go):
// a process's write waits for it (its ioctl holds no lock), an engine's
// only asks for it. A refusal is logged once per device and process.
func (s *System) admitWrite(d *Device, pa, n uint64, tgid int32) bool {
	l := &s.memLimit
	if n == 0 || (l.limit == 0 && !l.file) {
		return true
	}
	if d.chip.Mem().Missing(pa, n) == 0 {
		return true
	}
	r := l.getReclaimer()
	wait := r != nil && tgid != 0
	ok, full := s.tryAdmit(d, pa, n, tgid, !wait)
	switch {
	case ok || !full:
		return ok
	case !wait:
		if r != nil {
			r.Kick()
		}
		return false
	}
	r.Reclaim()
	ok, _ = s.tryAdmit(d, pa, n, tgid, true)
	return ok
}

// tryAdmit is one attempt of admitWrite; full reports a refusal by the
// limit, which is logged only when final.
func (s *System) tryAdmit(d *Device, pa, n uint64, tgid int32, final bool) (ok, full bool) {
	l := &s.memLimit
	l.mu.Lock()
	defer l.mu.Unlock()
	add := d.chip.Mem().Missing(pa, n) // again: a concurrent write may have reserved some
	if add == 0 {
		return true, false
	}
	if !l.file && l.limit > 0 {
		if held := s.heldLocked(); held+add > l.limit {
			if final {
				l.refuseLocked(d, tgid, pa, n, fmt.Sprintf("the backing holds %d of %d bytes, the write adds %d", held, l.limit, add), nil)
			}
			return false, true
		}
	}
	if err := d.chip.Reserve(pa, n); err != nil {
		l.refuseLocked(d, tgid, pa, n, "no space for it in the backing", err)
		return false, false
	}
	return true, false
}

// noteAccess counts n bytes the daemon is about to reach through its
// windows. A file-backed daemon with a limit checks its resident set
// every trimStep bytes and, past the limit, drops its own mappings: the
// pages stay in the page cache, where the kernel can write them back and
// reclaim them. It takes no lock (callers may hold any).
func (s *System) noteAccess(n uint64) {
	l := &s.memLimit
	if !l.file || l.limit == 0 {
		return
	}
	step := l.trimStep()
	after := l.accessed.Add(n)
	if after/step == (after-n)/step {
		return
	}
	if rss, err := residentSet(); err == nil && rss > l.limit {
		for _, d := range s.Devices {
			d.chip.Mem().Release()
		}
	}
}

func (l *memLimit) refuseLocked(d *Device, tgid int32, pa, n uint64, why string, err error) {
	key := [2]int32{int32(d.Index), tgid}
	if l.refused[key] || len(l.refused) >= refusedLogMax {
		return
	}
	l.refused[key] = true
	var pid any = tgid
	if tgid == 0 {
		pid = "dma" // an engine's write: no process is behind it
	}
	e := d.log.WithFields(logrus.Fields{"pid": pid, "pa": fmt.Sprintf("%#x", pa), "size": n, "limit": l.limit})
	if err != nil {
		e = e.WithError(err)
	}
	e.Warnf("memory limit: write refused (%s); later refusals for this process are not logged", why)
}

// heldLocked sums what every device's backing holds.
func (s *System) heldLocked() uint64 {
	var sum uint64
	for _, d := range s.Devices {
		n, _ := d.chip.PhysicalResident()
		sum += n
	}
	return sum
}

// residentSet reads the daemon's resident set size.
func residentSet() (uint64, error) {
	v, err := procfs.Field("/proc/self/status", "VmRSS")
	if err != nil {
		return 0, err
	}
	kb, err := strconv.ParseUint(strings.TrimSuffix(v, " kB"), 10, 64)
	return kb << 10, err
}

// MemoryFile is the control file (under neuronfs/ at the mount root) that
// reports the backing, the limit and what each device's backing holds
// against what it declares: `ls` and `top` show it.
const MemoryFile = "memory"

// memoryStatus renders MemoryFile: a line for the host, then one per
// device, each of key=value fields (sizes in bytes).
func (fs Sysfs) memoryStatus() string {
	s := fs.s
	var b strings.Builder
	limit, backing := s.MemoryLimit()
	per := make([]uint64, len(s.Devices))
	var total uint64
	for i, d := range s.Devices {
		per[i], _ = d.chip.PhysicalResident()
		total += per[i]
	}
	fmt.Fprintf(&b, "backing=%s limit=%d held=%d\n", backing, limit, total)
	declared := s.Arch.HBMBytes()
	for i, d := range s.Devices {
		fmt.Fprintf(&b, "%s declared=%d held=%d\n", d.Name(), declared, per[i])
	}
	return b.String()
}
