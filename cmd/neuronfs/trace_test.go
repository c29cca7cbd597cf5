package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/trace"
	"github.com/neuronfs/neuronfs/trace/abi"
)

// recordBringup traces the bring-up client inside `neuronfs run` and
// returns the trace file and what the client printed.
func recordBringup(t *testing.T) (string, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bringup.jsonl")
	cmd := neuronfs(t, "run", "--instance", "trn2.3xlarge", "--", os.Args[0], "trace", "-o", out, "--", os.Args[0], "__client", "bringup")
	said, err := cmd.Output()
	if err != nil {
		t.Fatalf("trace of the bring-up client: %v\n%s", err, said)
	}
	return out, string(said)
}

func readTrace(t *testing.T, path string) *trace.Trace {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := trace.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// field reads a named member of a recorded argument.
func field(t *testing.T, r *trace.Record, after bool, name string) uint64 {
	t.Helper()
	tr := &trace.Trace{}
	_, s, _ := abi.ForCommand(tr.Table(), r.Cmd)
	b := r.Before
	if after {
		b = r.After
	}
	for _, f := range s.Fields {
		if f.Name == name {
			v, ok := abi.Uint(b, f)
			if !ok {
				t.Fatalf("seq %d %s.%s not recorded", r.Seq, r.Name, name)
			}
			return v
		}
	}
	t.Fatalf("%s has no member %s", r.Name, name)
	return 0
}

func nested(t *testing.T, r *trace.Record, name string) trace.Nested {
	t.Helper()
	for _, n := range r.Nested {
		if n.Field == name {
			return n
		}
	}
	t.Fatalf("seq %d %s: no nested buffer %s", r.Seq, r.Name, name)
	return trace.Nested{}
}

func TestTraceBringup(t *testing.T) {
	path, said := recordBringup(t)
	var h1, h2, nqOff, nqHandle, bitmap uint64
	if _, err := fmt.Sscanf(said, "handles %d %d nq %v %d bitmap %v", &h1, &h2, &nqOff, &nqHandle, &bitmap); err != nil {
		t.Fatalf("client said %q: %v", said, err)
	}
	tr := readTrace(t, path)
	if tr.Header.DriverVersion != "2.25.4.0" || tr.Header.Architecture != "NDv3 Trainium2" || tr.Header.Machine != "amd64" {
		t.Errorf("header %+v", tr.Header)
	}
	// The client's own process: exec'd by the tracer, ended with status 0.
	var calls []trace.Record
	var ended string
	for _, r := range tr.Records {
		switch {
		case r.Op == trace.OpExit && r.ProcessExit:
			ended = trace.ExitText(&r)
		case !r.Lifetime():
			calls = append(calls, r)
		}
	}
	execd := slices.ContainsFunc(tr.Records, func(r trace.Record) bool {
		return r.Op == trace.OpExec && r.Seq < calls[0].Seq && filepath.Base(r.Path) == filepath.Base(os.Args[0])
	})
	if !execd || ended != "exit 0" {
		t.Errorf("lifetime: exec of the client recorded %v, process ended %q", execd, ended)
	}
	var got []string
	for _, r := range calls {
		if r.Op == trace.OpIoctl {
			got = append(got, r.Name)
		} else {
			got = append(got, r.Op)
		}
		if r.Path != "/dev/neuron0" {
			t.Errorf("seq %d: path %q", r.Seq, r.Path)
		}
		if r.Ret != 0 || r.Errno != 0 {
			if !(r.Op == trace.OpOpen && r.Ret == int64(r.FD)) {
				t.Errorf("seq %d %s: ret %d errno %d", r.Seq, r.Name, r.Ret, r.Errno)
			}
		}
	}
	if strings.Join(got, " ") != strings.Join(bringupCalls, " ") {
		t.Fatalf("calls:\n got %v\nwant %v", got, bringupCalls)
	}
	rec := func(i int) *trace.Record { return &calls[i] }
	// nth finds the n-th (from 0) call of that name in bringupCalls.
	nth := func(name string, n int) int {
		for i, c := range bringupCalls {
			if c == name {
				if n == 0 {
					return i
				}
				n--
			}
		}
		t.Fatalf("bringupCalls has no %s #%d", name, n)
		return 0
	}
	open2, closeW, closeRW := nth("open", 1), nth("close", 0), nth("close", 1)

	// The two opens: read-write, then write-only; the closes in reverse.
	if rec(0).Flags&3 != 2 || rec(open2).Flags&3 != 1 || rec(closeW).FD != rec(open2).FD || rec(closeRW).FD != rec(0).FD {
		t.Errorf("opens/closes: %+v %+v %+v %+v", rec(0), rec(open2), rec(closeW), rec(closeRW))
	}
	if v := field(t, rec(1), true, "architecture"); v != 3 {
		t.Errorf("DEVICE_BASIC_INFO architecture %d", v)
	}
	for i, c := range []struct {
		seq        int
		size, host uint64
		handle     uint64
	}{{5, 4096, 0, h1}, {7, 8192, 1, h2}} {
		r := rec(c.seq)
		if field(t, r, false, "size") != c.size || field(t, r, false, "host_memory") != c.host {
			t.Errorf("alloc %d: %x", i, r.Before)
		}
		n := nested(t, r, "mem_handle")
		if n.Len != 8 || len(n.After) != 8 || leU64(n.After) != c.handle {
			t.Errorf("alloc %d: nested handle %+v, want %d", i, n, c.handle)
		}
		info := rec(c.seq + 1)
		if field(t, info, false, "mem_handle") != c.handle || field(t, info, true, "size") != c.size {
			t.Errorf("MEM_GET_EXTENDED_INFO %d: %x", i, info.After)
		}
	}
	w := rec(9)
	if field(t, w, false, "mem_handle") != h1 || field(t, w, false, "size") != 64 || field(t, w, false, "copy_to_mem_handle") != 1 {
		t.Errorf("MEM_BUF_COPY64 write: %x", w.Before)
	}
	if n := nested(t, w, "buffer"); n.Len != 64 || !bytes.Equal(n.Before, bringupPattern) {
		t.Errorf("MEM_BUF_COPY64 write buffer %+v", n)
	}
	cp := rec(10)
	if field(t, cp, false, "src_mem_handle") != h1 || field(t, cp, false, "dst_mem_handle") != h2 || field(t, cp, false, "size") != 64 || field(t, cp, false, "dst_offset") != 128 {
		t.Errorf("MEM_COPY64: %x", cp.Before)
	}
	rd := rec(11)
	if field(t, rd, false, "mem_handle") != h2 || field(t, rd, false, "offset") != 128 || field(t, rd, false, "copy_to_mem_handle") != 0 {
		t.Errorf("MEM_BUF_COPY64 read: %x", rd.Before)
	}
	if n := nested(t, rd, "buffer"); !bytes.Equal(n.After, bringupPattern) {
		t.Errorf("MEM_BUF_COPY64 read buffer after %x", n.After)
	}
	ms := rec(12)
	if field(t, ms, false, "value") != 0xab || field(t, ms, false, "size") != 4096 {
		t.Errorf("MEMSET64: %x", ms.Before)
	}
	nq := rec(13)
	if field(t, nq, false, "nq_type") != 1 || field(t, nq, false, "size") != 4096 || field(t, nq, true, "mmap_offset") != nqOff || field(t, nq, true, "mem_handle") != nqHandle {
		t.Errorf("NOTIFICATIONS_INIT_V2: %x", nq.After)
	}
	mm, mu := rec(14), rec(15)
	if mm.Offset != nqOff || mm.Len != 4096 || mm.Addr == 0 || mu.Addr != mm.Addr || mu.Len != 4096 {
		t.Errorf("mmap %+v munmap %+v", mm, mu)
	}
	if field(t, rec(16), false, "mem_handle") != h1 || field(t, rec(17), false, "mem_handle") != h2 {
		t.Errorf("MEM_FREE handles %x %x", rec(16).Before, rec(17).Before)
	}
	mark, unmark := rec(nth("NEURON_IOCTL_CRWL_NC_RANGE_MARK", 0)), rec(nth("NEURON_IOCTL_CRWL_NC_RANGE_UNMARK", 0))
	if field(t, mark, false, "nc_count") != 1 || field(t, mark, false, "end_nc_index") != 7 || field(t, mark, true, "bitmap") != bitmap || field(t, unmark, false, "bitmap") != bitmap {
		t.Errorf("CRWL mark/unmark: %x %x", mark.After, unmark.Before)
	}

	// The decoder names every member.
	dec := neuronfs(t, "trace", "--decode", path)
	text, err := dec.Output()
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	for _, want := range []string{"MEM_ALLOC_V2MT64", "copy_to_mem_handle       1", "value                    171", fmt.Sprintf("mmap_offset              0 -> %d", nqOff), "# driver 2.25.4.0, NDv3 Trainium2"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("decoded trace lacks %q:\n%s", want, text)
		}
	}
}

func leU64(b []byte) uint64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// Without the privilege to load eBPF, trace says so in one line.
func TestTraceWithoutPrivilege(t *testing.T) {
	testutil.RequireFUSE(t) // for root, to become nobody
	bin := binaryCopy(t, "neuronfs")
	// As nobody, with every capability gone.
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", bin, "trace", "--", "true")
	cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		t.Fatal("trace succeeded without privileges")
	}
	// The line names the privileges, and nothing of the loader's answer
	// (EPERM, a library's hint about RLIMIT_MEMLOCK).
	if want := "neuronfs trace: " + trace.ErrNotPermitted.Error() + "\n"; stderr.String() != want || !strings.Contains(want, "CAP_BPF and CAP_PERFMON") {
		t.Fatalf("stderr %q, want %q", stderr.String(), want)
	}
}

// Traced from outside run with --children, the client (a grandchild of
// the traced command) is followed, with its fork and exit; the daemon's
// on-behalf opens of the device nodes show up under its own tgid.
func TestTraceChildren(t *testing.T) {
	out := filepath.Join(t.TempDir(), "children.jsonl")
	cmd := neuronfs(t, "trace", "--children", "-o", out, "--", os.Args[0], "run", "--instance", "trn2.3xlarge", "--", os.Args[0], "__client", "bringup")
	if said, err := cmd.Output(); err != nil {
		t.Fatalf("trace --children: %v\n%s", err, said)
	}
	tr := readTrace(t, out)
	if !tr.Header.Children {
		t.Errorf("header %+v", tr.Header)
	}
	byTgid := map[int][]string{}
	forked, exited := map[int]bool{}, map[int]string{}
	for _, r := range tr.Records {
		switch r.Op {
		case trace.OpFork:
			forked[r.Child] = !r.Thread && !r.Untraced
			continue
		case trace.OpExit:
			if r.ProcessExit {
				exited[r.TGID] = trace.ExitText(&r)
			}
			continue
		case trace.OpExec:
			continue
		}
		name := r.Op
		if r.Op == trace.OpIoctl {
			name = r.Name
		}
		byTgid[r.TGID] = append(byTgid[r.TGID], name)
	}
	found := false
	for tgid, calls := range byTgid {
		if strings.Join(calls, " ") == strings.Join(bringupCalls, " ") {
			found = true
			// Its lifetime is recorded: a followed fork, a clean exit.
			if !forked[tgid] || exited[tgid] != "exit 0" {
				t.Errorf("client %d: forked %v, ended %q", tgid, forked[tgid], exited[tgid])
			}
			continue
		}
		for _, c := range calls {
			if c != trace.OpOpen && c != trace.OpClose {
				t.Errorf("tgid %d (not the client) made %s", tgid, c)
			}
		}
	}
	if !found {
		t.Fatalf("no process made the bring-up calls: %v", byTgid)
	}
}

// Without --children, a forked process is recorded as a fork the trace
// does not follow (nothing of the child is), and the traced process's end
// with its status.
func TestTraceUntracedChild(t *testing.T) {
	out := filepath.Join(t.TempDir(), "untraced.jsonl")
	cmd := neuronfs(t, "trace", "-o", out, "--", "sh", "-c", "/bin/true; exit 3")
	if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("trace of sh: %v, want exit status 3", err)
	}
	tr := readTrace(t, out)
	var child, shell int
	ended := ""
	for _, r := range tr.Records {
		switch {
		case r.Op == trace.OpFork && !r.Thread:
			if !r.Untraced || child != 0 {
				t.Errorf("fork %+v (child so far %d)", r, child)
			}
			child, shell = r.Child, r.TGID
		case r.TGID == child:
			t.Errorf("record of the untraced child: %+v", r)
		case r.Op == trace.OpExit && r.ProcessExit && r.TGID == shell:
			ended = trace.ExitText(&r)
		}
	}
	if child == 0 || ended != "exit 3" {
		t.Fatalf("untraced child %d, shell ended %q\n%+v", child, ended, tr.Records)
	}
}
