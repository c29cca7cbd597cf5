package fs_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

// Offsets of core 1's counters in a datastore slot (31 device counters
// after an 8-byte header, then 31 per core).
const (
	dsCore1          = 8 + 8*31 + 8*31
	dsSuccess        = 1  // INFER_COMPLETED
	dsInferenceCount = 28 // INFERENCE_COUNT
	dsMACCount       = 29
)

func init() {
	// "ds" fills its datastore with counters for core 1, reports, and
	// releases it when told to (or leaves it to its last close).
	helpers["ds"] = func() int {
		d, err := runtime.Host{Root: os.Getenv("NEURONFS_ROOT")}.Open(0)
		if err != nil {
			fmt.Println("err", err)
			return 1
		}
		ds, err := d.AcquireDatastore(0)
		if err != nil {
			fmt.Println("err", err)
			return 1
		}
		m, err := d.MapDatastore(ds)
		if err != nil {
			fmt.Println("err", err)
			return 1
		}
		binary.LittleEndian.PutUint64(m[dsCore1+8*dsSuccess:], 3)
		binary.LittleEndian.PutUint64(m[dsCore1+8*dsInferenceCount:], 5)
		binary.LittleEndian.PutUint64(m[dsCore1+8*dsMACCount:], 10)
		fmt.Println("ready", ds.Size)
		line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		if strings.TrimSpace(line) == "release" {
			d.ReleaseDatastore()
			fmt.Println("released")
		}
		return 0
	}
}

func TestDatastore(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	cmd := helperCmd(t, "ds", "NEURONFS_ROOT="+dir)
	in, _ := cmd.StdinPipe()
	outp, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(outp)
	if line, _ := out.ReadString('\n'); line != "ready 262144\n" {
		t.Fatalf("helper: %q", line)
	}
	// A monitor reads the owner's counters live.
	d, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pid := int32(cmd.Process.Pid)
	ds, err := d.AcquireDatastore(pid)
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.MapDatastore(ds)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	if got := binary.LittleEndian.Uint64(m[dsCore1+8*dsInferenceCount:]); got != 5 {
		t.Fatalf("monitor sees inference count %d, want 5", got)
	}
	if _, err := d.AcquireDatastore(pid + 100000); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("acquiring an unknown pid's datastore: %v, want ENOENT", err)
	}
	// The monitor's release of someone else's slot does nothing.
	if err := d.ReleaseDatastore(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(in, "release")
	if line, _ := out.ReadString('\n'); line != "released\n" {
		t.Fatalf("helper: %q", line)
	}
	counter := func(p string) uint64 {
		b, _ := os.ReadFile(dir + "/sys/devices/virtual/neuron_device/neuron0/neuron_core1/stats/" + p)
		v, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return v
	}
	if counter("status/success/total") != 3 || counter("other_info/inference_count/total") != 5 || counter("other_info/flop_count/total") != 20 {
		t.Fatalf("aggregated: success %d inference %d flops %d", counter("status/success/total"), counter("other_info/inference_count/total"), counter("other_info/flop_count/total"))
	}
	if counter("../../neuron_core0/stats/other_info/inference_count/total") != 0 {
		t.Fatal("core 0 counted core 1's inferences")
	}
	// Released: the area is zeroed and the pid is gone.
	if got := binary.LittleEndian.Uint64(m[dsCore1+8*dsInferenceCount:]); got != 0 {
		t.Fatalf("released datastore still holds %d", got)
	}
	if _, err := d.AcquireDatastore(pid); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("after release: %v, want ENOENT", err)
	}
	in.Close()
	cmd.Wait()
}
