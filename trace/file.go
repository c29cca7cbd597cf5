// Package trace records the calls a process makes on /dev/neuron* (open,
// close, ioctl, mmap, munmap) with eBPF, and reads, writes and prints the
// recordings: JSON lines, a header line first.
package trace

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Format names the file format in the header. Version 2 adds the
// lifetime records (fork, exec, exit); version 1 files are read as they
// are, without them. Readers refuse other formats.
const (
	Format   = "neuronfs-trace/2"
	formatV1 = "neuronfs-trace/1"
)

// Header is the first line of a trace file.
type Header struct {
	Format string `json:"format"`
	// DriverVersion is /sys/module/neuron/version, empty when absent.
	DriverVersion string `json:"driver_version,omitempty"`
	// Architecture is the first device's sysfs arch_type and device_name.
	Architecture string `json:"architecture,omitempty"`
	// Instance is the EC2 instance type (DMI product_name), as on EC2.
	Instance string    `json:"instance,omitempty"`
	Machine  string    `json:"machine"` // the CPU architecture the syscalls ran on
	Start    time.Time `json:"start"`
	Command  []string  `json:"command,omitempty"`
	PID      int       `json:"pid,omitempty"`
	Children bool      `json:"children,omitempty"`
}

// Ops a record can have.
const (
	OpOpen   = "open"
	OpClose  = "close"
	OpIoctl  = "ioctl"
	OpMmap   = "mmap"
	OpMunmap = "munmap"
	// A traced process's lifetime (format 2): TID made a thread or a
	// process, TID ran a program, TID ended.
	OpFork = "fork"
	OpExec = "exec"
	OpExit = "exit"
)

// Bytes is raw memory, hex in JSON.
type Bytes []byte

// MarshalJSON renders the bytes as a hex string.
func (b Bytes) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString(b)) }

// UnmarshalJSON reads a hex string.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	v, err := hex.DecodeString(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// Nested is a buffer an argument struct points at, as far as it was read.
type Nested struct {
	Field string `json:"field"`
	Addr  uint64 `json:"addr"`
	Len   int    `json:"len"` // the buffer's size as the struct gives it
	// Before and After hold at most abi.NestedCap bytes; nil when the
	// memory could not be read.
	Before Bytes `json:"before"`
	After  Bytes `json:"after"`
}

// Record is one completed call.
type Record struct {
	Seq   int       `json:"seq"`
	Op    string    `json:"op"`
	Time  time.Time `json:"time"` // entry (or exit, if entry was not seen)
	DurNs int64     `json:"dur_ns"`
	TID   int       `json:"tid"`
	TGID  int       `json:"tgid"`
	FD    int       `json:"fd"` // the device fd; for open, the one returned
	Path  string    `json:"path"`

	// open
	Flags uint64 `json:"flags,omitempty"`

	// ioctl
	Cmd    uint32   `json:"cmd,omitempty"`
	Name   string   `json:"name,omitempty"`   // macro name, "" if unknown to the ABI table
	Struct string   `json:"struct,omitempty"` // argument type
	Size   int      `json:"size,omitempty"`   // its size from the ABI table
	Arg    uint64   `json:"arg,omitempty"`    // the argument pointer
	Before Bytes    `json:"before,omitempty"`
	After  Bytes    `json:"after,omitempty"`
	Nested []Nested `json:"nested,omitempty"`

	// mmap, munmap (Addr is the result for mmap)
	Addr   uint64 `json:"addr,omitempty"`
	Len    uint64 `json:"len,omitempty"`
	Prot   uint64 `json:"prot,omitempty"`
	MFlags uint64 `json:"mflags,omitempty"`
	Offset uint64 `json:"offset,omitempty"`

	// fork: Child is the new thread's tid or the new process's pid.
	Child  int  `json:"child,omitempty"`
	Thread bool `json:"thread,omitempty"` // a thread of TGID, not a process
	// Untraced: a process the trace does not follow (no --children).
	Untraced bool `json:"untraced,omitempty"`
	// exit: ProcessExit says TID was its process's last thread; Signal is
	// what killed it, else Status is its exit status. exec: Path is the
	// program.
	ProcessExit bool `json:"process_exit,omitempty"`
	Status      int  `json:"status,omitempty"`
	Signal      int  `json:"signal,omitempty"`

	Ret   int64  `json:"ret"`
	Errno int    `json:"errno,omitempty"`
	Error string `json:"error,omitempty"` // errno's name
}

// Lifetime says whether the record is a fork, exec or exit rather than a
// call on a device.
func (r *Record) Lifetime() bool { return r.Op == OpFork || r.Op == OpExec || r.Op == OpExit }

// Trace is a whole file.
type Trace struct {
	Header  Header
	Records []Record
}

// maxLine bounds one JSON line: a record holds at most a few KiB of hex.
const maxLine = 1 << 20

// Read parses and checks a trace file.
func Read(r io.Reader) (*Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	var t Trace
	line := 0
	for sc.Scan() {
		line++
		if line == 1 {
			if err := json.Unmarshal(sc.Bytes(), &t.Header); err != nil {
				return nil, fmt.Errorf("trace header: %w", err)
			}
			if t.Header.Format != Format && t.Header.Format != formatV1 {
				return nil, fmt.Errorf("trace header: format %q, want %q", t.Header.Format, Format)
			}
			continue
		}
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("trace line %d: %w", line, err)
		}
		if err := rec.check(); err != nil {
			return nil, fmt.Errorf("trace line %d: %w", line, err)
		}
		t.Records = append(t.Records, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trace line %d: %w", line+1, err)
	}
	if line == 0 {
		return nil, errors.New("trace: empty file")
	}
	return &t, nil
}

func (r *Record) check() error {
	switch r.Op {
	case OpOpen, OpClose, OpMmap, OpMunmap, OpFork, OpExec, OpExit:
	case OpIoctl:
		if r.Size < 0 || len(r.Before) > r.Size || len(r.After) > r.Size {
			return fmt.Errorf("seq %d: argument of %d/%d bytes for a %d-byte struct", r.Seq, len(r.Before), len(r.After), r.Size)
		}
		for _, n := range r.Nested {
			if n.Len < 0 || len(n.Before) > n.Len || len(n.After) > n.Len {
				return fmt.Errorf("seq %d: nested %s of %d/%d bytes for a %d-byte buffer", r.Seq, n.Field, len(n.Before), len(n.After), n.Len)
			}
		}
	default:
		return fmt.Errorf("seq %d: unknown op %q", r.Seq, r.Op)
	}
	return nil
}

// Writer writes a trace file line by line.
type Writer struct {
	w   *bufio.Writer
	enc *json.Encoder
}

// NewWriter writes the header at once.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	bw := bufio.NewWriter(w)
	tw := &Writer{w: bw, enc: json.NewEncoder(bw)}
	h.Format = Format
	if err := tw.enc.Encode(h); err != nil {
		return nil, fmt.Errorf("trace header: %w", err)
	}
	return tw, tw.w.Flush()
}

// Write appends one record.
func (w *Writer) Write(r *Record) error {
	if err := w.enc.Encode(r); err != nil {
		return fmt.Errorf("trace record %d: %w", r.Seq, err)
	}
	return nil
}

// Flush writes out what is buffered.
func (w *Writer) Flush() error { return w.w.Flush() }
