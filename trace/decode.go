package trace

import (
	"fmt"
	"io"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/trace/abi"
)

// Table picks the ABI table for a trace: its driver version's, else the
// default one.
func (t *Trace) Table() *ioctl.Table {
	if tab, err := ioctl.ForVersion(t.Header.DriverVersion); err == nil {
		return tab
	}
	return ioctl.Default()
}

// Print writes a trace for people: one block per call, every argument
// member with its value before and after the call.
func Print(w io.Writer, t *Trace) error {
	h := t.Header
	fmt.Fprintf(w, "# driver %s, %s, %s, started %s", orNone(h.DriverVersion), orNone(h.Architecture), h.Machine, h.Start.Format("2006-01-02T15:04:05.000Z07:00"))
	if len(h.Command) > 0 {
		fmt.Fprintf(w, ", command %q", h.Command)
	}
	fmt.Fprintln(w)
	tab := t.Table()
	for i := range t.Records {
		if err := printRecord(w, tab, &t.Records[i]); err != nil {
			return err
		}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

func result(r *Record) string {
	if r.Errno != 0 {
		return fmt.Sprintf("-1 %s (%s)", unix.ErrnoName(unix.Errno(r.Errno)), unix.Errno(r.Errno))
	}
	return fmt.Sprint(r.Ret)
}

func printRecord(w io.Writer, tab *ioctl.Table, r *Record) error {
	head := fmt.Sprintf("%d %s tid %d", r.Seq, r.Time.Format("15:04:05.000000"), r.TID)
	var err error
	switch r.Op {
	case OpOpen:
		_, err = fmt.Fprintf(w, "%s open(%q, %#x) = %s\n", head, r.Path, r.Flags, result(r))
	case OpClose:
		_, err = fmt.Fprintf(w, "%s close(%d %s) = %s\n", head, r.FD, r.Path, result(r))
	case OpMmap:
		_, err = fmt.Fprintf(w, "%s mmap(len %#x, prot %#x, flags %#x, %d %s, offset %#x) = %#x%s\n", head, r.Len, r.Prot, r.MFlags, r.FD, r.Path, r.Offset, r.Addr, errSuffix(r))
	case OpMunmap:
		_, err = fmt.Fprintf(w, "%s munmap(%#x, %#x) = %s\n", head, r.Addr, r.Len, result(r))
	case OpIoctl:
		err = printIoctl(w, tab, head, r)
	case OpFork:
		_, err = fmt.Fprintf(w, "%s %s\n", head, forkText(r))
	case OpExec:
		_, err = fmt.Fprintf(w, "%s exec(%q)\n", head, r.Path)
	case OpExit:
		_, err = fmt.Fprintf(w, "%s %s\n", head, ExitText(r))
	}
	return err
}

func errSuffix(r *Record) string {
	if r.Errno == 0 {
		return ""
	}
	return " " + result(r)
}

func printIoctl(w io.Writer, tab *ioctl.Table, head string, r *Record) error {
	name := r.Name
	if name == "" {
		name = "unknown"
	}
	fmt.Fprintf(w, "%s ioctl(%d %s, %s %#08x, %#x) = %s (%d µs)\n", head, r.FD, r.Path, strings.TrimPrefix(name, "NEURON_IOCTL_"), r.Cmd, r.Arg, result(r), r.DurNs/1000)
	_, s, ok := abi.ForCommand(tab, r.Cmd)
	if !ok || len(s.Fields) == 0 {
		if len(r.Before) > 0 {
			fmt.Fprintf(w, "    before %x\n    after  %x\n", r.Before, r.After)
		}
		return nil
	}
	for _, f := range s.Fields {
		b, a := abi.Format(r.Before, f), abi.Format(r.After, f)
		if a == b {
			fmt.Fprintf(w, "    %-24s %s\n", f.Name, b)
		} else {
			fmt.Fprintf(w, "    %-24s %s -> %s\n", f.Name, b, a)
		}
	}
	for _, n := range r.Nested {
		fmt.Fprintf(w, "    *%-23s %d bytes at %#x", n.Field, n.Len, n.Addr)
		if len(n.Before) < n.Len || len(n.After) < n.Len {
			fmt.Fprintf(w, " (first %d/%d recorded)", len(n.Before), len(n.After))
		}
		fmt.Fprintf(w, "\n      before %x\n      after  %x\n", n.Before, n.After)
	}
	_, err := fmt.Fprintln(w)
	return err
}

func forkText(r *Record) string {
	switch {
	case r.Thread:
		return fmt.Sprintf("thread %d", r.Child)
	case r.Untraced:
		return fmt.Sprintf("fork = %d (not traced)", r.Child)
	}
	return fmt.Sprintf("fork = %d", r.Child)
}

// ExitText says how a thread or process ended: "exit 0", "killed by SIGKILL".
func ExitText(r *Record) string {
	how := fmt.Sprintf("exit %d", r.Status)
	if r.Signal != 0 {
		how = "killed by " + unix.SignalName(unix.Signal(r.Signal))
	}
	if !r.ProcessExit {
		how = "thread " + how
	}
	return how
}
