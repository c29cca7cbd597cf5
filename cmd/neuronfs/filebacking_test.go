package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/neuronfs/neuronfs/internal/procfs"
	"github.com/neuronfs/neuronfs/runtime"
)

// A daemon on file backing with a limit writes more device memory than
// its limit across 16 trn2 devices, reads every byte back intact, and its
// resident set never passes the limit by more than one trim step. With
// NEURONFS_FILE_BACKING_GIB=32 this is more than this machine's RAM.
func TestFileBackingBeyondLimit(t *testing.T) {
	gib := 2
	if s := os.Getenv("NEURONFS_FILE_BACKING_GIB"); s != "" {
		gib, _ = strconv.Atoi(s)
	}
	const limit = 1 << 30
	dir := t.TempDir()
	cmd, mnt := startMount(t, "--instance=trn2.48xlarge", "--memory-backing=file:"+dir, "--memory-limit=1G")
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	h := runtime.Host{Root: mnt}
	per := uint64(gib) << 30 / 16
	const piece = 64 << 20
	buf := make([]byte, piece)
	pattern := func(dev int, off uint64) {
		for i := 0; i < piece; i += 8 {
			binary.LittleEndian.PutUint64(buf[i:], uint64(dev)<<56|(off+uint64(i)))
		}
	}
	var devs []*runtime.Device
	var mems []*runtime.Mem
	for i := range 16 {
		d, err := h.Open(i)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		m, err := d.Alloc(per, runtime.AllocOptions{Channel: uint32(i % 4)})
		if err != nil {
			t.Fatalf("device %d: %v", i, err)
		}
		devs, mems = append(devs, d), append(mems, m)
		for off := uint64(0); off < per; off += piece {
			pattern(i, off)
			if err := m.Write(off, buf); err != nil {
				t.Fatalf("device %d: write at %#x: %v", i, off, err)
			}
		}
	}
	emu, err := h.EmulatorMemory()
	if err != nil {
		t.Fatal(err)
	}
	if emu.Held < uint64(gib)<<30 || !strings.HasPrefix(emu.Backing, "file:") {
		t.Errorf("neuronfs/memory: %+v after writing %d GiB", emu, gib)
	}
	got := make([]byte, piece)
	for i, m := range mems {
		for off := uint64(0); off < per; off += piece {
			if err := m.Read(off, got); err != nil {
				t.Fatalf("device %d: read at %#x: %v", i, off, err)
			}
			pattern(i, off)
			if !bytes.Equal(got, buf) {
				t.Fatalf("device %d: the %d MiB at %#x came back changed", i, piece>>20, off)
			}
		}
	}
	hwm := statusKiB(t, cmd.Process.Pid, "VmHWM") << 10
	t.Logf("%d GiB written and read back; daemon peak RSS %d MiB, limit %d MiB", gib, hwm>>20, limit>>20)
	// One trim step (256 MiB) past the limit, and the daemon's own heap
	// (a race-detector build's included).
	if hwm > limit+512<<20 {
		t.Errorf("daemon peak RSS %d MiB, limit %d MiB", hwm>>20, limit>>20)
	}
}

// statusKiB reads a kB field of /proc/PID/status.
func statusKiB(t *testing.T, pid int, field string) uint64 {
	t.Helper()
	v, err := procfs.Field(fmt.Sprintf("/proc/%d/status", pid), field)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(v, " kB"), 10, 64)
	if err != nil {
		t.Fatalf("%s of %d: %q", field, pid, v)
	}
	return n
}
