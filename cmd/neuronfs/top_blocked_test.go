package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

// stageBlocked runs, on core nc of device 0, PE and POOL programs that
// wait for semaphore 7, which nothing raises.
func stageBlocked(t *testing.T, dir string, nc uint32) *runtime.Device {
	t.Helper()
	dev, _ := stageProgram(t, dir, nc, seq.NewWait(seq.WaitSemGE, 7, 1), seq.NewRecord(seq.OpHalt))
	return dev
}

// stageProgram runs recs after a wait for the doorbell's semaphore 0 as
// the PE and POOL program of core nc of device 0, the runtime's way
// (images in device memory, the exec request delivered by the core's exec
// queue, a doorbell), and returns the image's address. The device stays
// open until the test ends, or its release would reset the core.
func stageProgram(t *testing.T, dir string, nc uint32, recs ...*seq.Record) (*runtime.Device, uint64) {
	t.Helper()
	dev, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	if err := dev.Reset(1 << nc); err != nil {
		t.Fatal(err)
	}
	q, err := dev.InitQueue(nc*16+3, 6, 64, runtime.AllocOptions{Core: nc})
	if err != nil {
		t.Fatal(err)
	}
	alloc := func(size uint64) *runtime.Mem {
		m, err := dev.Alloc(size, runtime.AllocOptions{Core: nc})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	img := alloc(4096)
	prog := seq.Assemble(img.PA, append([]*seq.Record{seq.NewWait(seq.WaitSemGE, 0, 1)}, recs...)...)
	if err := img.Write(0, prog.Data); err != nil {
		t.Fatal(err)
	}
	var req [0x38]byte
	for _, e := range []seq.Engine{seq.PE, seq.POOL} {
		binary.LittleEndian.PutUint32(req[0x04+4*int(e):], uint32(img.PA))
		binary.LittleEndian.PutUint32(req[0x18+4*int(e):], uint32(img.PA>>32))
	}
	binary.LittleEndian.PutUint32(req[0x34:], 1)
	buf, slot := alloc(64), alloc(64)
	if err := buf.Write(0, req[:]); err != nil {
		t.Fatal(err)
	}
	evt, err := dev.SemaphoreAddress(nc, 13, dhal.TPBEventsOffset)
	if err != nil {
		t.Fatal(err)
	}
	tx, rx := q.Descriptors([]runtime.Copy{{Src: buf.PA, Dst: slot.PA, Len: 52}, {Src: buf.PA + 0x34, Dst: evt, Len: 4}})
	if err := q.WriteDescriptors(tx, rx); err != nil {
		t.Fatal(err)
	}
	if err := dev.Doorbell(nc, 0, 1); err != nil {
		t.Fatal(err)
	}
	return dev, img.PA
}

// top shows a line per blocked core: which engine waits at which record
// for what.
func TestTopShowsBlockedCore(t *testing.T) {
	dir, sys := testutil.MountConfig(t, device.Config{Instance: "trn2.3xlarge"})
	stageBlocked(t, dir, 2)
	testutil.WaitFor(t, "core 2 blocked", 20*time.Second, func() bool { return len(sys.Device(0).Chip().BlockedCores()) == 1 })
	cmd := exec.Command(os.Args[0], "top", "--root", dir, "--once", "--interval", "50ms")
	cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("top --once: %v\n%s", err, out)
	}
	var line string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "  nc2 blocked: ") {
			line = l
		}
	}
	for _, want := range []string{"PE waits at ", "; POOL waits at ", "for semaphore 7 >= 1 (now 0)", fmt.Sprintf("(%v)", seq.NewWait(seq.WaitSemGE, 7, 1).Opcode())} {
		if !strings.Contains(line, want) {
			t.Errorf("blocked line %q lacks %q:\n%s", line, want, out)
		}
	}
	if strings.Count(string(out), " blocked: ") != 1 {
		t.Errorf("want one blocked line:\n%s", out)
	}
}

// A program whose engines met a record they only counted says so where a
// user looks: the cores file, the state document's per-core compute
// counts, and top; each names the record's opcode and address.
func TestNotEmulatedIsReported(t *testing.T) {
	dir, sys := testutil.MountConfig(t, device.Config{Instance: "trn2.3xlarge"})
	// MATMUL_SPARSE (0x07) is a real opcode whose layout no source gives.
	_, img := stageProgram(t, dir, 1, seq.NewRecord(seq.OpMatmulSparse), seq.NewRecord(seq.OpHalt))
	testutil.WaitFor(t, "both engines halt", 20*time.Second, func() bool {
		ss := sys.Device(0).Chip().Core(1).EngineStatus()
		return len(ss) == 2 && ss[0].State == seq.Halted && ss[1].State == seq.Halted
	})
	at := fmt.Sprintf("MATMUL_SPARSE(0x07) at %#x: %s", img+seq.RecordSize, seq.WhyNoSource)
	cores, err := os.ReadFile(dir + "/neuronfs/cores")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NOT EMULATED: 2 of 6 records were only counted", "last on PE: " + at, "last on POOL: " + at} {
		if !strings.Contains(string(cores), want) {
			t.Errorf("cores file lacks %q:\n%s", want, cores)
		}
	}

	var st device.HostState
	b, err := os.ReadFile(dir + "/neuronfs/state")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("state: %v", err)
	}
	for _, c := range st.Devices[0].Cores {
		want := device.ComputeState{Last: []device.SkippedRecord{}}
		if c.Index == 1 {
			want.Records, want.NotEmulated = 6, 2
			for _, e := range []string{"PE", "POOL"} {
				want.Last = append(want.Last, device.SkippedRecord{Engine: e, PC: fmt.Sprintf("%#x", img+seq.RecordSize),
					Opcode: "0x07", Name: "MATMUL_SPARSE", Why: seq.WhyNoSource})
			}
		}
		if !reflect.DeepEqual(c.Compute, want) {
			t.Errorf("state: core %d compute %+v, want %+v", c.Index, c.Compute, want)
		}
	}

	cmd := exec.Command(os.Args[0], "top", "--root", dir, "--once", "--interval", "50ms")
	cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("top --once: %v\n%s", err, out)
	}
	want := "  nc1 NOT EMULATED: 2 of 6 records only counted, results not computed (last on PE: " + at + "; on POOL: " + at + ")"
	if !strings.Contains(string(out), want+"\n") {
		t.Errorf("top lacks %q:\n%s", want, out)
	}

	cmd = exec.Command(os.Args[0], "ls", "--root", dir)
	cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1")
	if out, err = cmd.Output(); err != nil {
		t.Fatalf("ls: %v\n%s", err, out)
	}
	if want := "neuron0 " + want[2:]; !strings.Contains(string(out), want+"\n") {
		t.Errorf("ls lacks %q:\n%s", want, out)
	}
}
