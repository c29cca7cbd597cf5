package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/trace/abi"
)

// ErrNotPermitted wraps every failure that means this process may not use
// eBPF (no CAP_BPF/CAP_PERFMON, a user namespace, a locked-down kernel).
var ErrNotPermitted = errors.New("eBPF not permitted (run as root, or with CAP_BPF and CAP_PERFMON)")

// Probe is the loaded and attached eBPF side.
type Probe struct {
	tgids, inflight, nested, events *ebpf.Map
	lost                            *ebpf.Map // [0]: events the full ring dropped
	devfds                          *ebpf.Map // tgid<<32|fd of device fds
	progs                           []*ebpf.Program
	links                           []link.Link
	reader                          *ringbuf.Reader
}

// ringSize is the ring buffer's size: about 14,000 ioctls, or 150,000
// closes (a traced `neuronfs run` daemon closes many files as it starts).
const ringSize = 16 << 20

// Options choose what a probe follows.
type ProbeOptions struct {
	Children bool // follow the processes traced ones fork (their threads are always followed)
	// Table gives the commands whose nested buffers are copied.
	Table *ioctl.Table
}

// NewProbe loads the programs and attaches them to the raw tracepoints.
// Nothing is traced until Add.
func NewProbe(o ProbeOptions) (_ *Probe, err error) {
	if goruntime.GOARCH != "amd64" {
		return nil, fmt.Errorf("trace: only amd64 syscalls are decoded, not %s", goruntime.GOARCH)
	}
	// Kernels before 5.11 charge BPF memory to RLIMIT_MEMLOCK. Where the
	// limit cannot be raised, creating the maps below says why.
	_ = rlimit.RemoveMemlock()
	p := &Probe{}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	if p.tgids, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nfs_tgids", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 4096}); err != nil {
		return nil, permission(fmt.Errorf("creating the tgid map: %w", err))
	}
	if p.inflight, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nfs_inflight", Type: ebpf.LRUHash, KeySize: 4, ValueSize: 8, MaxEntries: 8192}); err != nil {
		return nil, permission(fmt.Errorf("creating the in-flight map: %w", err))
	}
	if p.nested, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nfs_nested", Type: ebpf.Hash, KeySize: 4, ValueSize: 16, MaxEntries: 256}); err != nil {
		return nil, permission(fmt.Errorf("creating the nested-buffer map: %w", err))
	}
	if p.events, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nfs_events", Type: ebpf.RingBuf, MaxEntries: ringSize}); err != nil {
		return nil, permission(fmt.Errorf("creating the ring buffer: %w", err))
	}
	if p.lost, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nfs_lost", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1}); err != nil {
		return nil, permission(fmt.Errorf("creating the lost-event counter: %w", err))
	}
	if p.devfds, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nfs_devfds", Type: ebpf.Hash, KeySize: 8, ValueSize: 4, MaxEntries: 16384}); err != nil {
		return nil, permission(fmt.Errorf("creating the device-fd map: %w", err))
	}
	if err := p.fillNested(o.Table); err != nil {
		return nil, err
	}
	m := progMaps{tgids: p.tgids.FD(), inflight: p.inflight.FD(), nested: p.nested.FD(), events: p.events.FD(), lost: p.lost.FD(), devfds: p.devfds.FD()}
	if err := p.attach("sys_enter", enterProg(m)); err != nil {
		return nil, err
	}
	if err := p.attach("sys_exit", exitProg(m)); err != nil {
		return nil, err
	}
	offs, err := taskLayout()
	if err != nil {
		return nil, err
	}
	for _, prog := range []struct {
		tp    string
		insns asm.Instructions
	}{
		{"sched_process_fork", forkProg(m, offs, o.Children)},
		{"sched_process_exec", execProg(m, offs)},
		{"sched_process_exit", deathProg(m, offs)},
	} {
		if err := p.attach(prog.tp, prog.insns); err != nil {
			return nil, err
		}
	}
	if p.reader, err = ringbuf.NewReader(p.events); err != nil {
		return nil, fmt.Errorf("trace: ring buffer reader: %w", err)
	}
	return p, nil
}

func permission(err error) error {
	if errors.Is(err, ebpf.ErrNotSupported) {
		return fmt.Errorf("trace: %w", err)
	}
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("%w: %v", ErrNotPermitted, err)
	}
	return fmt.Errorf("trace: %w", err)
}

func (p *Probe) attach(tp string, insns asm.Instructions) error {
	prog, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		Name:         "nfs_" + tp,
		Type:         ebpf.RawTracepoint,
		Instructions: insns,
		// bpf_probe_read_user and the ring buffer helpers are GPL-only.
		License: "GPL",
	}, ebpf.ProgramOptions{LogSizeStart: 1 << 20})
	if err != nil {
		return permission(fmt.Errorf("loading the %s program: %w", tp, err))
	}
	p.progs = append(p.progs, prog)
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: tp, Program: prog})
	if err != nil {
		return permission(fmt.Errorf("attaching to raw tracepoint %s: %w", tp, err))
	}
	p.links = append(p.links, l)
	return nil
}

// fillNested tells the programs, per command, which pointer members to
// follow and how many bytes to copy (a void buffer's length is only known
// from the struct, so it gets the cap and Go trims).
func (p *Probe) fillNested(tab *ioctl.Table) error {
	if tab == nil {
		tab = ioctl.Default()
	}
	for _, c := range tab.Commands() {
		_, s, _ := abi.ForCommand(tab, c.Cmd)
		var v [4]uint32
		n := 0
		for _, f := range s.Fields {
			if !f.Pointer() || n == 2 {
				continue
			}
			want := uint32(abi.NestedCap)
			if f.Count == "" && f.Pointee > 0 {
				want = uint32(min(f.Pointee, abi.NestedCap))
			}
			v[2*n], v[2*n+1] = uint32(f.Offset), want
			n++
		}
		if n == 0 {
			continue
		}
		var b [16]byte
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], x)
		}
		if err := p.nested.Put(c.Cmd, b[:]); err != nil {
			return fmt.Errorf("trace: nested-buffer map: %w", err)
		}
	}
	return nil
}

// taskLayout finds in the kernel's BTF the members the lifetime programs
// read: who a new task is, how a thread ended, what a process executed.
func taskLayout() (taskOffsets, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return taskOffsets{}, fmt.Errorf("trace: following processes needs the kernel's BTF: %w", err)
	}
	var o taskOffsets
	for _, m := range []struct {
		typ, member string
		off         *int32
	}{
		{"task_struct", "pid", &o.pid},
		{"task_struct", "tgid", &o.tgid},
		{"task_struct", "exit_code", &o.exitCode},
		{"task_struct", "signal", &o.signal},
		{"signal_struct", "live", &o.live},
		{"linux_binprm", "filename", &o.filename},
	} {
		var st *btf.Struct
		if err := spec.TypeByName(m.typ, &st); err != nil {
			return taskOffsets{}, fmt.Errorf("trace: %s in the kernel's BTF: %w", m.typ, err)
		}
		i := slices.IndexFunc(st.Members, func(x btf.Member) bool { return x.Name == m.member })
		if i < 0 {
			return taskOffsets{}, fmt.Errorf("trace: %s has no %s member in the kernel's BTF", m.typ, m.member)
		}
		*m.off = int32(st.Members[i].Offset.Bytes())
	}
	return o, nil
}

// Add traces a process (by tgid).
func (p *Probe) Add(tgid int) error {
	if err := p.tgids.Put(uint32(tgid), uint32(1)); err != nil {
		return fmt.Errorf("trace: adding pid %d: %w", tgid, err)
	}
	return nil
}

// SetDeviceFD tells the programs whether an fd of a process is a device,
// so its ioctls of types other than 'N' are recorded too. Until Go has seen
// the open, those are missed (the driver answers none of them).
func (p *Probe) SetDeviceFD(tgid, fd int, device bool) error {
	key := uint64(tgid)<<32 | uint64(uint32(fd))
	if !device {
		if err := p.devfds.Delete(key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("trace: device-fd map: %w", err)
		}
		return nil
	}
	if err := p.devfds.Put(key, uint32(1)); err != nil {
		return fmt.Errorf("trace: device-fd map: %w", err)
	}
	return nil
}

// Lost returns how many events found the ring buffer full.
func (p *Probe) Lost() (uint64, error) {
	var n uint64
	if err := p.lost.Lookup(uint32(0), &n); err != nil {
		return 0, fmt.Errorf("trace: reading the lost-event counter: %w", err)
	}
	return n, nil
}

// Reader returns the ring buffer of raw events.
func (p *Probe) Reader() *ringbuf.Reader { return p.reader }

// Close detaches and frees everything.
func (p *Probe) Close() error {
	var errs []error
	for _, l := range p.links {
		errs = append(errs, l.Close())
	}
	if p.reader != nil {
		errs = append(errs, p.reader.Close())
	}
	for _, prog := range p.progs {
		errs = append(errs, prog.Close())
	}
	for _, m := range []*ebpf.Map{p.tgids, p.inflight, p.nested, p.events, p.lost, p.devfds} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}
