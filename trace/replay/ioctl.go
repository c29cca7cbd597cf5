package replay

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/trace"
	"github.com/neuronfs/neuronfs/trace/abi"
)

// unknownBuffer is what a pointer member gets when the trace does not
// say how big its buffer is.
const unknownBuffer = 4096

func (s *state) ioctl(r *trace.Record) (Result, error) {
	call := printable(strings.TrimPrefix(r.Name, "NEURON_IOCTL_"))
	if r.Name == "" {
		call = fmt.Sprintf("ioctl %#x", r.Cmd)
	}
	res, fd, ok := s.onFD(r, call)
	if !ok {
		return res, nil
	}
	skip := func(why string) (Result, error) { return skipped(call, why), nil }
	c, st, known := abi.ForCommand(s.tab, r.Cmd)
	switch {
	case !known:
		return skip("command unknown to the ABI table")
	case c.ArgSize == 0:
		// No argument: the value passed means nothing to the driver.
		ret, e := sysIoctl(fd, r.Cmd, 0)
		result(&res, r, ret, e)
		return finish(res), nil
	case st.Size == 0:
		return skip("argument layout unknown")
	case len(r.Before) < st.Size:
		return skip("argument not recorded in full")
	}
	buf, addr, err := callerBuffer(st.Size)
	if err != nil {
		return res, err
	}
	copy(buf, r.Before)
	nested, err := s.passArgs(&res, r, st, buf)
	if err != nil {
		return res, err
	}
	s.mapArrayHandles(st, buf)
	ret, e := sysIoctl(fd, r.Cmd, addr)
	result(&res, r, ret, e)
	if e != 0 || r.Errno != 0 {
		// What a failed call leaves in its argument is not an output: the
		// errno (compared above) is the whole answer.
		res.NotCompared = append(res.NotCompared, "outputs (the call failed)")
		return finish(res), nil
	}
	if len(r.After) < st.Size {
		res.NotCompared = append(res.NotCompared, "output (not recorded)")
		return finish(res), nil
	}
	s.compareOutputs(&res, r, st, buf, nested)
	return finish(res), nil
}

func recordedNested(r *trace.Record, field string) *trace.Nested {
	for i := range r.Nested {
		if r.Nested[i].Field == field {
			return &r.Nested[i]
		}
	}
	return nil
}

func (s *state) compareField(res *Result, r *trace.Record, st abi.Struct, f abi.Field, got []byte) {
	if f.Size == 0 {
		return
	}
	want := r.After[f.Offset : f.Offset+f.Size]
	have := got[f.Offset : f.Offset+f.Size]
	oldBefore, _ := abi.Uint(r.Before, f)
	oldAfter, _ := abi.Uint(r.After, f)
	newAfter, _ := abi.Uint(got, f)
	switch {
	case f.Pointer():
		if oldBefore != 0 || oldAfter != 0 {
			res.NotCompared = append(res.NotCompared, f.Name+" (pointer, rewritten)")
			return
		}
	case f.Handle():
		s.compareHandle(res, f.Name, oldBefore, oldAfter, newAfter)
		return
	case f.Role == ioctl.RoleAddress:
		s.compareAddress(res, f.Name, oldBefore, oldAfter, newAfter, extentOf(st, r.After))
		return
	case s.mapAddrs && f.Role == ioctl.RoleBARAddress:
		s.learnBARs(res, st, f, r.After, got)
		return
	case f.Role == ioctl.RolePID && s.PIDs[int(oldAfter)] != 0:
		if want := s.PIDs[int(oldAfter)]; newAfter != want {
			res.Diffs = append(res.Diffs, fmt.Sprintf("%s: recorded traced process %d, got %d (not its replayer, %d)", f.Name, oldAfter, newAfter, want))
		}
		return
	}
	if !bytes.Equal(want, have) {
		res.Diffs = append(res.Diffs, fmt.Sprintf("%s: recorded %s, got %s", f.Name, abi.Format(r.After, f), abi.Format(got, f)))
	}
}

// compareHandle checks a handle through the map of recorded to new
// handles; a handle the call handed out joins the map.
func (s *state) compareHandle(res *Result, name string, oldBefore, oldAfter, newAfter uint64) {
	if oldAfter == 0 && newAfter == 0 {
		return
	}
	if h, ok := s.Handles[oldAfter]; ok {
		// With address mapping a recording made elsewhere may reuse a
		// value freed earlier (a handle, a chunk's kernel address): an
		// output that differs from the map replaces the mapping.
		if h != newAfter && !(s.mapAddrs && oldAfter != oldBefore && newAfter != 0) {
			res.Diffs = append(res.Diffs, fmt.Sprintf("%s: recorded %d (replayed as %d), got %d", name, oldAfter, h, newAfter))
			return
		}
		if h == newAfter {
			return
		}
	}
	if oldAfter != oldBefore && oldAfter != 0 && newAfter != 0 {
		s.Handles[oldAfter] = newAfter
		if oldAfter == newAfter {
			res.NotCompared = append(res.NotCompared, fmt.Sprintf("%s (new handle %d, as recorded)", name, newAfter))
		} else {
			s.rewrote(res, fmt.Sprintf("%s (new handle: recorded %d is %d here)", name, oldAfter, newAfter))
		}
		return
	}
	if oldAfter == oldBefore && newAfter == oldAfter {
		return // an input no call returned, passed as recorded and left alone
	}
	res.Diffs = append(res.Diffs, fmt.Sprintf("%s: recorded %d, got %d", name, oldAfter, newAfter))
}

func (s *state) compareNested(res *Result, n trace.Nested, target ioctl.Target, got []byte) {
	if got == nil || n.After == nil {
		res.NotCompared = append(res.NotCompared, "*"+n.Field+" (not recorded)")
		return
	}
	// A __u64 a handle pointer leads to is a handle handed out.
	if target == ioctl.TargetHandle && n.Len == 8 && len(n.After) == 8 {
		var before uint64
		if len(n.Before) == 8 {
			before = binary.LittleEndian.Uint64(n.Before)
		}
		s.compareHandle(res, "*"+n.Field, before, binary.LittleEndian.Uint64(n.After), binary.LittleEndian.Uint64(got))
		return
	}
	// A __u64 an address pointer leads to is an address handed out.
	if target == ioctl.TargetAddress && n.Len == 8 && len(n.After) == 8 {
		var before uint64
		if len(n.Before) == 8 {
			before = binary.LittleEndian.Uint64(n.Before)
		}
		s.compareAddress(res, "*"+n.Field, before, binary.LittleEndian.Uint64(n.After), binary.LittleEndian.Uint64(got), 0)
		return
	}
	k := min(len(n.After), len(got))
	if !bytes.Equal(n.After[:k], got[:k]) {
		i := 0
		for i < k && n.After[i] == got[i] {
			i++
		}
		res.Diffs = append(res.Diffs, fmt.Sprintf("*%s: byte %d: recorded %#02x, got %#02x", n.Field, i, n.After[i], got[i]))
	}
	if k < n.Len {
		res.NotCompared = append(res.NotCompared, fmt.Sprintf("*%s bytes %d..%d (beyond the recorded %d)", n.Field, k, n.Len, k))
	}
}

// passArgs makes the recorded argument in buf this replay's: nested
// buffers of the caller's, pids, addresses and handles translated. It
// returns the nested buffers passed, by field.
func (s *state) passArgs(res *Result, r *trace.Record, st abi.Struct, buf []byte) (map[string][]byte, error) {
	nested := map[string][]byte{}
	for _, f := range st.Fields {
		old, _ := abi.Uint(r.Before, f)
		switch {
		case f.Pointer() && old != 0:
			n := recordedNested(r, f.Name)
			size := unknownBuffer
			if n != nil {
				size = n.Len
			} else {
				res.NotCompared = append(res.NotCompared, f.Name+" buffer (size unknown, a zeroed page passed)")
			}
			nb, naddr, err := callerBuffer(size)
			if err != nil {
				return nil, err
			}
			if n != nil {
				copy(nb, n.Before)
				s.translateTarget(f.Target, nb)
			}
			nested[f.Name] = nb
			abi.PutUint(buf, f, naddr)
		case f.Role == ioctl.RolePID && s.PIDs[int(old)] != 0:
			abi.PutUint(buf, f, s.PIDs[int(old)]) // the traced process's replayer
		case f.Role == ioctl.RoleAddress && old != 0:
			abi.PutUint(buf, f, s.Addrs.translate(old))
		case f.Handle() && old != 0:
			if h, ok := s.Handles[old]; ok {
				abi.PutUint(buf, f, h)
			} else {
				res.NotCompared = append(res.NotCompared, fmt.Sprintf("%s %d passed as recorded (no earlier call returned it)", f.Name, old))
			}
		}
	}
	return nested, nil
}

// compareOutputs compares what the call left in buf and the nested
// buffers with what the recorded call left.
func (s *state) compareOutputs(res *Result, r *trace.Record, st abi.Struct, buf []byte, nested map[string][]byte) {
	if hasArrays(st) {
		// Array entries were passed mapped; compare them as mapped.
		mapped := *r
		mapped.After = append([]byte(nil), r.After...)
		s.mapArrayHandles(st, mapped.After)
		r = &mapped
	}
	for _, f := range st.Fields {
		s.compareField(res, r, st, f, buf)
	}
	for _, n := range r.Nested {
		f, _ := st.Field(n.Field)
		if n.After != nil {
			// What the buffer holds here is its translation.
			n.After = append([]byte(nil), n.After...)
			s.translateTarget(f.Target, n.After)
		}
		s.compareNested(res, n, f.Target, nested[n.Field])
	}
}
