package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/trace"
	"github.com/neuronfs/neuronfs/trace/abi"
)

// sampleTraces are recordings of the bring-up client, checked in so a
// change in the emulation shows up as a replay difference. After an
// intended change, record again (as root, from the repository root):
//
//	go build -o /tmp/neuronfs ./cmd/neuronfs && go test -c -o /tmp/nfstest ./cmd/neuronfs &&
//	/tmp/neuronfs run --instance trn2.3xlarge -- /tmp/neuronfs trace \
//	    -o cmd/neuronfs/testdata/traces/bringup-trn2.3xlarge.jsonl -- /tmp/nfstest __client bringup
var sampleTraces = []string{"testdata/traces/bringup-trn2.3xlarge.jsonl"}

// replayTable runs replay and returns its table, stderr and exit status.
func replayTable(t *testing.T, path string, args ...string) (string, string, int) {
	t.Helper()
	cmd := neuronfs(t, append([]string{"replay", path}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), status
}

// rows returns the replay table's RESULT column by SEQ.
func rows(t *testing.T, table string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(table, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) >= 4 && f[0] != "SEQ" && !strings.HasSuffix(f[1], "calls:") {
			if f[1] == "open" || f[1] == "close" || f[1] == "mmap" || f[1] == "munmap" {
				out[f[0]] = f[3]
			} else {
				out[f[0]] = f[2]
			}
		} else if len(f) == 3 {
			out[f[0]] = f[2]
		}
	}
	return out
}

func assertAllMatch(t *testing.T, path string, n int) {
	t.Helper()
	table, stderr, status := replayTable(t, path)
	if status != 0 {
		t.Fatalf("replay of %s: status %d\n%s%s", path, status, table, stderr)
	}
	r := rows(t, table)
	if len(r) != n {
		t.Fatalf("replay table has %d calls, want %d:\n%s", len(r), n, table)
	}
	for seq, res := range r {
		if res != "match" {
			t.Errorf("call %s: %s\n%s", seq, res, table)
		}
	}
	if !strings.Contains(table, "differ, 0 skipped") || !strings.Contains(table, " 0 differ") {
		t.Errorf("summary:\n%s", table)
	}
	if _, stderr, status := replayTable(t, path, "--strict"); status != 0 {
		t.Fatalf("replay --strict: status %d: %s", status, stderr)
	}
}

func TestReplayBringup(t *testing.T) {
	path, _ := recordBringup(t)
	assertAllMatch(t, path, len(bringupCalls))

	tr := readTrace(t, path)
	// Change what one call returned (MEM_GET_EXTENDED_INFO's size, the
	// 8th call) and, in another copy, one call's errno (MEMSET64, the
	// 13th): replay must name that call and only that one.
	sizeOf := func(r *trace.Record, name string) abi.Field {
		_, s, _ := abi.ForCommand(tr.Table(), r.Cmd)
		for _, f := range s.Fields {
			if f.Name == name {
				return f
			}
		}
		t.Fatalf("no member %s", name)
		return abi.Field{}
	}
	for _, c := range []struct {
		seq    int
		change func(r *trace.Record)
		want   string
	}{
		{8, func(r *trace.Record) { abi.PutUint(r.After, sizeOf(r, "size"), 8193) }, "size: recorded 8193, got 8192"},
		{13, func(r *trace.Record) { r.Ret, r.Errno, r.Error = -1, 22, "EINVAL" }, "errno: recorded EINVAL, got none"},
	} {
		altered := *tr
		altered.Records = append([]trace.Record(nil), tr.Records...)
		r := nthCall(t, altered.Records, c.seq)
		r.After = append(trace.Bytes(nil), r.After...)
		c.change(r)
		alteredPath := filepath.Join(t.TempDir(), "altered.jsonl")
		writeTrace(t, alteredPath, &altered)

		table, _, status := replayTable(t, alteredPath)
		if status == 0 {
			t.Errorf("seq %d altered: replay status 0\n%s", c.seq, table)
		}
		for seq, res := range rows(t, table) {
			if want := map[bool]string{true: "differ", false: "match"}[seq == itoa(r.Seq)]; res != want {
				t.Errorf("seq %d altered: call %s is %s, want %s\n%s", c.seq, seq, res, want, table)
			}
		}
		if !strings.Contains(table, c.want) {
			t.Errorf("seq %d altered: table lacks %q:\n%s", c.seq, c.want, table)
		}
		_, stderr, status := replayTable(t, alteredPath, "--strict")
		if status == 0 || !strings.Contains(stderr, "call "+itoa(r.Seq)+" (") || !strings.Contains(stderr, c.want) {
			t.Errorf("seq %d altered: --strict status %d, stderr %q", c.seq, status, stderr)
		}
	}
}

func TestReplaySampleTraces(t *testing.T) {
	for _, p := range sampleTraces {
		t.Run(filepath.Base(p), func(t *testing.T) {
			assertAllMatch(t, p, len(readTrace(t, p).Records))
		})
	}
}

// nthCall is the n-th (from 1) call on a device among records.
func nthCall(t *testing.T, rs []trace.Record, n int) *trace.Record {
	t.Helper()
	left := n
	for i := range rs {
		if !rs[i].Lifetime() {
			if left--; left == 0 {
				return &rs[i]
			}
		}
	}
	t.Fatalf("fewer than %d calls", n)
	return nil
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func writeTrace(t *testing.T, path string, tr *trace.Trace) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := trace.NewWriter(f, tr.Header)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tr.Records {
		if err := w.Write(&tr.Records[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

// A capture whose physical addresses are not this replay's: the sample,
// recorded on driver 2.25.4.0, replayed on 2.27.4.0, whose devices take
// host memory at start for their completion queues, so every host chunk
// lands elsewhere. Compared exactly, addresses differ; with
// --map-addresses they are learned from outputs and translated in mmap
// offsets and DMA descriptors, and every call matches.
func TestReplayMapsAddresses(t *testing.T) {
	path := sampleTraces[0]
	table, _, status := replayTable(t, path, "--driver-version", "2.27.4.0")
	if status == 0 || !strings.Contains(table, "pa: recorded") {
		t.Fatalf("exact replay on 2.27.4.0 should differ in addresses (status %d):\n%s", status, table)
	}
	table, stderr, status := replayTable(t, path, "--driver-version", "2.27.4.0", "--map-addresses")
	if status != 0 {
		t.Fatalf("replay --map-addresses: status %d\n%s%s", status, table, stderr)
	}
	for seq, res := range rows(t, table) {
		if res != "match" {
			t.Errorf("call %s: %s", seq, res)
		}
	}
	if !strings.Contains(table, "new address: recorded") {
		t.Errorf("no address was translated:\n%s", table)
	}
}

// A capture from a host whose BARs sit elsewhere: the sample with
// DEVICE_INFO's bar_address[0] and every BAR_WRITE address moved by the
// same amount. Exactly, the BAR writes miss BAR0; with --map-addresses
// the BAR DEVICE_INFO reports is learned and the addresses follow it.
func TestReplayMapsBARs(t *testing.T) {
	const delta = 0x10000000000
	tr := readTrace(t, sampleTraces[0])
	moved := *tr
	moved.Records = append([]trace.Record(nil), tr.Records...)
	shift := func(b trace.Bytes, off int) trace.Bytes {
		b = append(trace.Bytes(nil), b...)
		for i := off; i+8 <= len(b); i += 8 {
			binary.LittleEndian.PutUint64(b[i:], binary.LittleEndian.Uint64(b[i:])+delta)
			if off != 0 {
				break // DEVICE_INFO: only bar_address[0]
			}
		}
		return b
	}
	var infos, writes int
	for i := range moved.Records {
		r := &moved.Records[i]
		switch r.Name {
		case "NEURON_IOCTL_DEVICE_INFO":
			_, st, _ := abi.ForCommand(tr.Table(), r.Cmd)
			for _, f := range st.Fields {
				if f.Name == "bar_address" {
					r.After = shift(r.After, f.Offset)
				}
			}
			infos++
		case "NEURON_IOCTL_BAR_WRITE":
			r.Nested = append([]trace.Nested(nil), r.Nested...)
			for j := range r.Nested {
				if n := &r.Nested[j]; n.Field == "address" {
					n.Before, n.After = shift(n.Before, 0), shift(n.After, 0)
				}
			}
			writes++
		}
	}
	if infos == 0 || writes == 0 {
		t.Fatalf("the sample has %d DEVICE_INFO and %d BAR_WRITE calls", infos, writes)
	}
	path := filepath.Join(t.TempDir(), "moved.jsonl")
	writeTrace(t, path, &moved)

	table, _, status := replayTable(t, path)
	if status == 0 || !strings.Contains(table, "BAR_WRITE               differ") {
		t.Fatalf("exact replay of moved BARs should differ (status %d):\n%s", status, table)
	}
	table, stderr, status := replayTable(t, path, "--map-addresses")
	if status != 0 || !strings.Contains(table, "bar_address[0] (recorded") {
		t.Fatalf("replay --map-addresses: status %d\n%s%s", status, table, stderr)
	}
}

// The newest emulated driver is traced and replayed through the same
// description as the default: every call of the bring-up client matches.
func TestTraceReplayNewestDriver(t *testing.T) {
	newest := ioctl.Versions()[0]
	out := filepath.Join(t.TempDir(), "bringup.jsonl")
	cmd := neuronfs(t, "run", "--instance", "trn2.3xlarge", "--driver-version", newest, "--", os.Args[0], "trace", "-o", out, "--", os.Args[0], "__client", "bringup")
	if said, err := cmd.Output(); err != nil {
		t.Fatalf("trace on %s: %v\n%s", newest, err, said)
	}
	if tr := readTrace(t, out); tr.Header.DriverVersion != newest {
		t.Fatalf("trace header says driver %q, want %q", tr.Header.DriverVersion, newest)
	}
	assertAllMatch(t, out, len(bringupCalls))
}
