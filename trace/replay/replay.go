// Package replay re-issues a recorded trace against devices (emulated, in
// practice) and compares each call's result and output with the recording,
// each recorded process's calls from a process of its own (see Run).
// What differs between runs by nature is rewritten, not compared: fds,
// user pointers (fresh buffers of the recorded sizes), memory handles
// (mapped from the ones earlier calls returned) and the pids of the traced
// processes (their replayers').
package replay

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/trace"
)

// Status is the outcome of one call.
type Status string

const (
	Match   Status = "match"
	Differ  Status = "differ"
	Skipped Status = "skipped" // not issued, or nothing could be compared
)

// Result is one replayed call.
type Result struct {
	Seq    int
	Call   string // "open /dev/neuron0", "MEM_ALLOC_V2MT64", ...
	Status Status
	Diffs  []string // what differs
	// NotCompared lists what was rewritten or not recorded, so was not
	// compared (a match says nothing about these).
	NotCompared []string
}

// Options tune a replay.
type Options struct {
	// Strict counts a value rewritten to something other than what was
	// recorded (a handle, a physical or BAR address, an mmap offset) as a
	// difference, and stops at the first call that differs. Fds and user
	// addresses are this run's own and never count.
	Strict bool
	// MapAddresses translates physical addresses (see addrMap) instead of
	// requiring the recorded ones, for captures made elsewhere.
	MapAddresses bool
	// Worker is the command that runs a worker (one that calls Serve on
	// fd 3, with the same trace and options), for Run.
	Worker []string

	// maxWorkers, for tests, replaces the limit of live replayers.
	maxWorkers int
	// nodes, for tests, replaces where device nodes are and how they are
	// checked (nil: defaultNodes).
	nodes *nodePolicy
}

type fdKey struct{ tgid, fd int }
type mapKey struct {
	tgid int
	addr uint64
}

// mapping is a mapping replay made: where, and how long (in pages).
type mapping struct{ addr, len uint64 }

// shared is what the processes of a replay see alike, carried from one
// to the next with each call (see Run): a handle or address one process
// learns is valid in the others (a chunk shared through the datastore),
// and each recorded process's pid maps to its replayer's.
type shared struct {
	Handles map[uint64]uint64
	Addrs   addrMap
	BARs    addrMap // BAR addresses, a space of their own
	PIDs    map[int]uint64
}

// state replays the calls of one recorded process.
type state struct {
	shared
	tab      *ioctl.Table
	fds      map[fdKey]int
	cloexec  map[fdKey]bool // fds an exec closes
	maps     map[mapKey]mapping
	nodes    *nodePolicy
	mapAddrs bool
	strict   bool
}

func newState(t *trace.Trace, o Options) *state {
	if o.nodes == nil {
		o.nodes = defaultNodes()
	}
	return &state{
		shared: shared{Handles: map[uint64]uint64{}, PIDs: map[int]uint64{}},
		tab:    t.Table(), fds: map[fdKey]int{}, cloexec: map[fdKey]bool{}, maps: map[mapKey]mapping{}, mapAddrs: o.MapAddresses,
		nodes:  o.nodes,
		strict: o.Strict,
	}
}

func (s *state) call(r *trace.Record) (Result, error) {
	switch r.Op {
	case trace.OpOpen:
		return s.open(r), nil
	case trace.OpClose:
		return s.close(r), nil
	case trace.OpMmap:
		return s.mmap(r), nil
	case trace.OpMunmap:
		return s.munmap(r), nil
	case trace.OpIoctl:
		return s.ioctl(r)
	}
	return skipped(r.Op, "unknown op"), nil
}

// result compares a call's return value and errno with the recording.
func result(res *Result, r *trace.Record, ret int64, e unix.Errno) {
	if int(e) != r.Errno {
		res.Diffs = append(res.Diffs, fmt.Sprintf("errno: recorded %s, got %s", errName(r.Errno), errName(int(e))))
		return
	}
	if e == 0 && ret != r.Ret {
		res.Diffs = append(res.Diffs, fmt.Sprintf("return value: recorded %d, got %d", r.Ret, ret))
	}
}

func errName(e int) string {
	if e == 0 {
		return "none"
	}
	return unix.ErrnoName(unix.Errno(e))
}

// notOpened is why a call on a descriptor the replay has not opened is
// not issued.
const notOpened = "fd was not opened in the trace"

// skipped is the result of a call not issued, saying why.
func skipped(call, why string) Result {
	return Result{Call: call, Status: Skipped, NotCompared: []string{why}}
}

// onFD starts the result of a call on r's descriptor: with the descriptor
// the replay opened for it, or, when it opened none, skipped.
func (s *state) onFD(r *trace.Record, call string) (res Result, fd int, ok bool) {
	fd, ok = s.fds[fdKey{r.TGID, r.FD}]
	if !ok {
		return skipped(call, notOpened), 0, false
	}
	return Result{Call: call}, fd, true
}

func finish(res Result) Result {
	if len(res.Diffs) > 0 {
		res.Status = Differ
	} else if res.Status == "" {
		res.Status = Match
	}
	return res
}

func (s *state) open(r *trace.Record) Result {
	res := Result{Call: "open " + printable(r.Path)}
	minor, ok := s.nodes.minor(r.Path)
	if !ok {
		return skipped(res.Call, "not an emulated device node (replay opens only "+s.nodes.dir+"/neuronN)")
	}
	flags, dropped := openFlags(r.Flags)
	fd, err := s.nodes.open(r.Path, flags)
	if err == unix.ELOOP {
		return skipped(res.Call, "a symlink, not a device node")
	}
	if err == nil {
		if verr := s.nodes.verify(fd, minor); verr != nil {
			unix.Close(fd)
			return skipped(res.Call, "not an emulated device node: "+verr.Error())
		}
	}
	if dropped != 0 {
		res.NotCompared = append(res.NotCompared, fmt.Sprintf("flags %#x (not passed: replay opens with the access mode and O_NONBLOCK only)", dropped))
	}
	e, _ := err.(unix.Errno)
	if err != nil && e == 0 {
		e = unix.EIO
	}
	if e == 0 {
		s.fds[fdKey{r.TGID, r.FD}] = fd
		s.cloexec[fdKey{r.TGID, r.FD}] = r.Flags&unix.O_CLOEXEC != 0
		res.NotCompared = append(res.NotCompared, "fd (rewritten)")
		result(&res, r, r.Ret, 0)
	} else {
		result(&res, r, -1, e)
	}
	return finish(res)
}

func (s *state) close(r *trace.Record) Result {
	res, fd, ok := s.onFD(r, "close "+printable(r.Path))
	if !ok {
		return res
	}
	delete(s.fds, fdKey{r.TGID, r.FD})
	delete(s.cloexec, fdKey{r.TGID, r.FD})
	var e unix.Errno
	if err := unix.Close(fd); err != nil {
		e, _ = err.(unix.Errno)
	}
	result(&res, r, 0, e)
	return finish(res)
}

func (s *state) mmap(r *trace.Record) Result {
	res, fd, ok := s.onFD(r, "mmap "+printable(r.Path))
	if !ok {
		return res
	}
	prot, flags, dropped, why := mapArgs(r.Len, r.Prot, r.MFlags)
	if why != "" {
		return skipped(res.Call, why)
	}
	for _, d := range dropped {
		res.NotCompared = append(res.NotCompared, d+" (not passed: replay maps device memory, no more)")
	}
	// The recorded address is this process's to choose again; the offset
	// is a physical address, translated like the others.
	offset := s.Addrs.translate(r.Offset)
	if offset != r.Offset {
		s.rewrote(&res, fmt.Sprintf("offset (recorded %#x is %#x here)", r.Offset, offset))
	}
	addr, e := sysMmap(r.Len, prot, flags, fd, offset)
	result(&res, r, 0, e)
	if e == 0 {
		s.maps[mapKey{r.TGID, r.Addr}] = mapping{addr, pageAlign(r.Len)}
		res.NotCompared = append(res.NotCompared, "address (rewritten)")
	}
	return finish(res)
}

func (s *state) munmap(r *trace.Record) Result {
	res := Result{Call: "munmap " + printable(r.Path)}
	m, ok := s.maps[mapKey{r.TGID, r.Addr}]
	if !ok {
		return skipped(res.Call, "not the start of a replayed mapping")
	}
	delete(s.maps, mapKey{r.TGID, r.Addr})
	// Past the replayed mapping is this process's own memory, not what
	// the recorded process had there: never unmapped.
	length := r.Len
	if length > m.len {
		length = m.len
		res.NotCompared = append(res.NotCompared, fmt.Sprintf("length (recorded %#x, the mapping's %#x unmapped)", r.Len, m.len))
	}
	result(&res, r, 0, sysMunmap(m.addr, length))
	return finish(res)
}

// printable is a string from the trace as the report shows it: quoted
// when it holds anything a terminal would act on.
func printable(s string) string {
	for _, c := range s {
		if c == utf8.RuneError || !strconv.IsPrint(c) {
			return strconv.QuoteToASCII(s)
		}
	}
	return s
}

// rewrote notes a value replayed as something other than what was
// recorded: not compared, unless --strict counts it as a difference.
func (s *state) rewrote(res *Result, note string) {
	if s.strict {
		res.Diffs = append(res.Diffs, note+", rewritten (--strict)")
		return
	}
	res.NotCompared = append(res.NotCompared, note)
}
