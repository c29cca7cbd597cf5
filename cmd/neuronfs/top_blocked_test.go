package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
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
// wait for semaphore 7, which nothing raises: the runtime's way (images in
// device memory, the exec request delivered by the core's exec queue, a
// doorbell). The device stays open until the test ends, or its release
// would reset the core.
func stageBlocked(t *testing.T, dir string, nc uint32) *runtime.Device {
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
	prog := seq.Assemble(img.PA, seq.NewWait(seq.WaitSemGE, 0, 1), seq.NewWait(seq.WaitSemGE, 7, 1), seq.NewRecord(seq.OpHalt))
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
	return dev
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
