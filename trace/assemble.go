package trace

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/trace/abi"
)

// assembler pairs entry and exit events into records, resolves fds to
// paths, and keeps only calls on /dev/neuron* devices.
type assembler struct {
	tab *ioctl.Table
	// clock turns bpf_ktime_get_ns (CLOCK_MONOTONIC) into wall time.
	clock   int64
	proc    string           // procfs, for the fallback fd resolution
	pending map[int]rawEvent // tid → entry event not yet exited
	// restarting holds calls whose exit said the kernel will restart them.
	restarting map[int]restarted
	fds        map[int]map[int]string // tgid → fd → path ("" not a device)
	maps       map[int][]mapping      // tgid → device mappings
	seq        int
	emit       func(*Record) error
	isDevice   func(path string) bool
	// deviceFD mirrors the fd table's devices into the probe (nil: none).
	deviceFD func(tgid, fd int, device bool) error
	children bool // new processes are followed (see lifetime)
	// launcher is the process that execs the traced command
	// (launcher.go), set by the session's caller before it is followed.
	launcher atomic.Pointer[launcherState]
}

type mapping struct {
	addr, len uint64
	path      string
}

func newAssembler(tab *ioctl.Table, emit func(*Record) error) *assembler {
	var mono, real unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
	unix.ClockGettime(unix.CLOCK_REALTIME, &real)
	return &assembler{
		tab: tab, clock: real.Nano() - mono.Nano(), proc: "/proc", emit: emit, isDevice: IsDevice,
		pending: map[int]rawEvent{}, restarting: map[int]restarted{}, fds: map[int]map[int]string{}, maps: map[int][]mapping{},
	}
}

// IsDevice says whether a path names a Neuron device node.
func IsDevice(path string) bool { return strings.HasPrefix(path, "/dev/neuron") }

// Kernel-internal results that mean the syscall will run again after a
// signal (or, for a handler without SA_RESTART, return EINTR): the
// sys_exit tracepoint sees them before the restart.
func restartCode(ret int64) bool { return ret <= -512 && ret >= -516 }

func (a *assembler) event(e rawEvent) error {
	switch e.kind {
	case kindFork, kindExec, kindDeath:
		return a.lifetime(e)
	case kindEnter:
		if r, ok := a.restarting[e.tid]; ok {
			delete(a.restarting, e.tid)
			if r.exit.nr != e.nr {
				// The call did not come back: the caller saw EINTR.
				r.exit.ret = -int64(unix.EINTR)
				a.pending[e.tid] = r.enter
				if err := a.exit(r.exit); err != nil {
					return err
				}
			}
		}
		a.pending[e.tid] = e
		return nil
	}
	if restartCode(e.ret) {
		// Keep the call: the next enter on this thread tells whether it
		// was restarted (then only the restarted call is recorded).
		a.restarting[e.tid] = restarted{enter: a.pending[e.tid], exit: e}
		delete(a.pending, e.tid)
		return nil
	}
	return a.exit(e)
}

// restarted is a syscall whose exit was a restart code.
type restarted struct{ enter, exit rawEvent }

func (a *assembler) exit(e rawEvent) error {
	enter, ok := a.pending[e.tid]
	if ok && enter.nr == e.nr {
		delete(a.pending, e.tid)
	} else {
		ok = false
	}
	r := Record{TID: e.tid, TGID: e.tgid, Time: a.wall(e.ts)}
	if ok {
		r.Time, r.DurNs = a.wall(enter.ts), int64(e.ts-enter.ts)
	}
	setResult(&r, e.ret)
	switch e.nr {
	case sysOpen, sysOpenat, sysOpenat2:
		return a.open(&r, e)
	case sysClose:
		// Only from the table: procfs no longer knows a closed fd.
		r.Op, r.FD = OpClose, int(int32(e.args[0]))
		r.Path = a.fds[e.tgid][r.FD]
		a.setFD(e.tgid, r.FD, "")
		delete(a.fds[e.tgid], r.FD)
		if !a.isDevice(r.Path) {
			return nil
		}
	case sysIoctl:
		r.Op, r.FD = OpIoctl, int(int32(e.args[0]))
		if r.Path = a.fdPath(e.tgid, r.FD); !a.isDevice(r.Path) {
			return nil
		}
		a.ioctl(&r, e, enter, ok)
	case sysMmap:
		r.Op, r.FD = OpMmap, int(int32(e.args[4]))
		if r.Path = a.fdPath(e.tgid, r.FD); !a.isDevice(r.Path) {
			return nil
		}
		r.Len, r.Prot, r.MFlags, r.Offset = e.args[1], e.args[2], e.args[3], e.args[5]
		if r.Errno == 0 {
			r.Addr, r.Ret = uint64(e.ret), 0
			a.maps[e.tgid] = append(a.maps[e.tgid], mapping{r.Addr, r.Len, r.Path})
		}
	case sysMunmap:
		r.Op, r.Addr, r.Len, r.FD = OpMunmap, e.args[0], e.args[1], -1
		if r.Path = a.unmap(e.tgid, r.Addr, r.Len); r.Path == "" {
			return nil
		}
	default:
		return nil
	}
	return a.record(&r)
}

func (a *assembler) record(r *Record) error {
	a.seq++
	r.Seq = a.seq
	return a.emit(r)
}

func (a *assembler) wall(ts uint64) time.Time { return time.Unix(0, int64(ts)+a.clock).UTC() }

// setResult splits a raw return value into result and errno, as libc does.
func setResult(r *Record, ret int64) {
	if ret < 0 && ret >= -4095 {
		r.Ret, r.Errno, r.Error = -1, int(-ret), unix.ErrnoName(unix.Errno(-ret))
		return
	}
	r.Ret = ret
}

func (a *assembler) open(r *Record, e rawEvent) error {
	name := string(e.data)
	if i := bytes.IndexByte(e.data, 0); i >= 0 {
		name = string(e.data[:i])
	}
	if e.nr == sysOpen {
		r.Flags = e.args[1]
	} else if e.nr == sysOpenat {
		r.Flags = e.args[2]
	}
	// Resolving a relative name costs a readlink: only for device names.
	if !strings.HasPrefix(filepath.Base(name), "neuron") {
		if r.Errno == 0 {
			a.setFD(e.tgid, int(r.Ret), "")
		}
		return nil
	}
	if !filepath.IsAbs(name) {
		base := fmt.Sprintf("%s/%d/cwd", a.proc, e.tgid)
		if dirfd := int32(e.args[0]); e.nr != sysOpen && dirfd != unix.AT_FDCWD {
			base = fmt.Sprintf("%s/%d/fd/%d", a.proc, e.tgid, dirfd)
		}
		dir, err := os.Readlink(base)
		if err != nil {
			return nil // the process or its directory fd is gone: cannot tell
		}
		name = filepath.Join(dir, name)
	}
	if !a.isDevice(name) {
		if r.Errno == 0 {
			a.setFD(e.tgid, int(r.Ret), "")
		}
		return nil
	}
	r.Op, r.Path, r.FD = OpOpen, filepath.Clean(name), -1
	if r.Errno == 0 {
		r.FD = int(r.Ret)
		a.setFD(e.tgid, r.FD, r.Path)
	}
	return a.record(r)
}

func (a *assembler) setFD(tgid, fd int, path string) {
	m := a.fds[tgid]
	if m == nil {
		m = map[int]string{}
		a.fds[tgid] = m
	}
	was := a.isDevice(m[fd])
	m[fd] = path
	if now := a.isDevice(path); now != was && a.deviceFD != nil {
		a.deviceFD(tgid, fd, now)
	}
}

// fdPath resolves an fd: from the opens seen, else from procfs (an fd
// opened before tracing began, or inherited).
func (a *assembler) fdPath(tgid, fd int) string {
	if p, ok := a.fds[tgid][fd]; ok {
		return p
	}
	p, _ := os.Readlink(fmt.Sprintf("%s/%d/fd/%d", a.proc, tgid, fd))
	a.setFD(tgid, fd, p)
	return p
}

// unmap drops the device mappings inside [addr, addr+n) and returns the
// device of one the range touched ("" for none).
func (a *assembler) unmap(tgid int, addr, n uint64) string {
	hit := ""
	kept := a.maps[tgid][:0]
	for _, m := range a.maps[tgid] {
		if m.addr < addr+n && addr < m.addr+m.len {
			hit = m.path
			if m.addr >= addr && m.addr+m.len <= addr+n {
				continue
			}
		}
		kept = append(kept, m)
	}
	a.maps[tgid] = kept
	return hit
}

func (a *assembler) ioctl(r *Record, exit, enter rawEvent, haveEnter bool) {
	r.Cmd, r.Arg = uint32(exit.args[1]), exit.args[2]
	c, s, known := abi.ForCommand(a.tab, r.Cmd)
	if known {
		r.Name, r.Struct, r.Size = c.Name, s.Name, s.Size
	}
	if haveEnter {
		r.Before = trim(enter.data, r.Size)
	}
	r.After = trim(exit.data, r.Size)
	// The eBPF side follows the first two pointer members (see fillNested).
	slot := 0
	for _, f := range s.Fields {
		if !f.Pointer() || slot == 2 {
			continue
		}
		i := slot
		slot++
		addr, _ := abi.Uint(r.Before, f)
		if !haveEnter {
			addr, _ = abi.Uint(r.After, f)
		}
		if addr == 0 {
			continue
		}
		n := Nested{Field: f.Name, Addr: addr, Len: -1}
		for _, nb := range abi.NestedBuffers(s, r.Before) {
			if nb.Field.Name == f.Name {
				n.Len = nb.Len
			}
		}
		if n.Len < 0 {
			continue // size unknown: nothing honest to keep
		}
		if haveEnter {
			n.Before = trim(enter.nested[i], n.Len)
		}
		n.After = trim(exit.nested[i], n.Len)
		r.Nested = append(r.Nested, n)
	}
}

func trim(b []byte, n int) Bytes {
	if b == nil {
		return nil
	}
	return Bytes(append([]byte{}, b[:min(len(b), n)]...))
}
