package device

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/mmio"
	"github.com/neuronfs/neuronfs/ioctl"
)

func newResetSystem(t *testing.T, latency time.Duration, fail bool) *System {
	t.Helper()
	// The driver waits 1 s (scaled) for the firmware to finish: scale so
	// that a reset of this latency fits twice.
	scale := max(DefaultTimeScale, 2*latency.Seconds())
	s, err := NewSystem(Config{Instance: "trn2.48xlarge", ResetLatency: latency, FailResets: fail, TimeScale: scale})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestNCResetLifecycle(t *testing.T) {
	s := newResetSystem(t, 20*time.Millisecond, false)
	d := s.Devices[0]
	ctx := context.Background()
	f := open(t, d, syscall.O_RDWR, 100)
	call(t, ctx, f, 100, ioctl.CmdCInitSetState, ioctl.CInitSet{NCID: 2, State: cinitStarted})
	// The probe reset counted once for every core.
	before2, _, _ := d.metrics.Value(2, "other_info/reset_req_count")
	before3, _, _ := d.metrics.Value(3, "other_info/reset_req_count")

	res, v := call(t, ctx, f, 100, ioctl.CmdNCReset, ioctl.DeviceReset{NCMap: 1 << 2})
	if res != 0 || v.RequestID != 100 {
		t.Fatalf("NC_RESET: %d, request %d", res, v.RequestID)
	}
	d.mu.Lock()
	cinit := d.cinit[2]
	d.mu.Unlock()
	after2, present, _ := d.metrics.Value(2, "other_info/reset_req_count")
	after3, _, _ := d.metrics.Value(3, "other_info/reset_req_count")
	if cinit != cinitInvalid || after2 != before2+1 || present != 1 || after3 != before3 {
		t.Errorf("at queueing: cinit %d, reset counts core 2 %d->%d, core 3 %d->%d", cinit, before2, after2, before3, after3)
	}
	res, _ = call(t, ctx, f, 100, ioctl.CmdNCReset, ioctl.DeviceReset{NCMap: 1})
	if res != 1 {
		t.Errorf("second NC_RESET before reaping: %d, want 1", res)
	}
	res, rd := call(t, ctx, f, 100, ioctl.CmdNCResetReady, ioctl.DeviceReady{RequestID: 100, Result: 7})
	if res != 0 || rd.Result != 0 {
		t.Fatalf("NC_RESET_READY: %d result %d", res, rd.Result)
	}
	_, rd = call(t, ctx, f, 100, ioctl.CmdNCResetReady, ioctl.DeviceReady{RequestID: 100})
	if rd.Result != 1 {
		t.Errorf("reaped twice: result %d, want 1 (unknown request)", rd.Result)
	}
}

func TestResetsCoalesce(t *testing.T) {
	s := newResetSystem(t, 50*time.Millisecond, false)
	d := s.Devices[1]
	ctx := context.Background()
	base := d.reset.hardwareResets
	files := []*File{open(t, d, syscall.O_RDWR, 1), open(t, d, syscall.O_RDWR, 2), open(t, d, syscall.O_RDWR, 3)}
	for i, f := range files {
		call(t, ctx, f, int32(i+1), ioctl.CmdNCReset, ioctl.DeviceReset{NCMap: 1 << i})
		if i == 0 {
			time.Sleep(10 * time.Millisecond) // the first is under way
		}
	}
	for i, f := range files {
		if _, rd := call(t, ctx, f, int32(i+1), ioctl.CmdNCResetReady, ioctl.DeviceReady{RequestID: uint32(i + 1)}); rd.Result != 0 {
			t.Errorf("request %d: result %d", i+1, rd.Result)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if got := d.reset.hardwareResets - base; got != 2 {
		t.Errorf("%d hardware resets for 3 requests, want 2 (the last two merged)", got)
	}
}

func TestResetFailureAndDeprecatedCalls(t *testing.T) {
	s := newResetSystem(t, time.Millisecond, true)
	d := s.Devices[0]
	if d.State() != StateInvalid {
		t.Fatalf("state after a failed probe reset: %d", d.State())
	}
	// An invalid device refuses normal opens.
	if _, errno := d.Open(context.Background(), Caller{Tgid: 5}, syscall.O_RDWR); errno != syscall.EINVAL {
		t.Fatalf("open of an invalid device: %v", errno)
	}
	ok := newResetSystem(t, time.Millisecond, false)
	f := open(t, ok.Devices[0], syscall.O_RDWR, 100)
	ok.faults.ResetFail.Store(true)
	ctx := context.Background()
	res, _ := call(t, ctx, f, 100, ioctl.CmdDeviceReset, struct{}{})
	wantErrno(t, "DEVICE_RESET", res, 0)
	if res, b := call(t, ctx, f, 100, ioctl.CmdDeviceReady, uint8(9)); res != 0 || b != 0 {
		t.Errorf("DEVICE_READY after a failed reset: %d, byte %d; want 0", res, b)
	}
	if _, b := call(t, ctx, f, 100, ioctl.CmdDeviceReady, uint8(9)); b != 1 {
		t.Errorf("DEVICE_READY with no request: byte %d, want 1", b)
	}
	// A failure counts on every core, not only the reset ones.
	for c := 0; c < 8; c++ {
		if got, _, _ := ok.Devices[0].metrics.Value(c, "other_info/reset_fail_count"); got != 1 {
			t.Errorf("core %d fail count %d, want 1", c, got)
		}
	}
}

// Only SIGTERM or SIGKILL end a reset wait; other signals' interrupts are
// ignored, as the driver ignores them.
func TestResetWaitSignals(t *testing.T) {
	s := newResetSystem(t, 300*time.Millisecond, false)
	d := s.Devices[2]
	f := open(t, d, syscall.O_RDWR, 100)
	call(t, context.Background(), f, 100, ioctl.CmdNCReset, ioctl.DeviceReset{NCMap: 1})

	interrupted, cancel := context.WithCancel(context.Background())
	cancel()
	d.mu.Lock()
	got := d.reset.waitLocked(interrupted, func() bool { return false }, 100, false)
	d.mu.Unlock()
	if got != 0 {
		t.Errorf("wait interrupted by a harmless signal: %d, want 0 after completion", got)
	}

	call(t, context.Background(), f, 100, ioctl.CmdNCReset, ioctl.DeviceReset{NCMap: 1})
	start := time.Now()
	d.mu.Lock()
	got = d.reset.waitLocked(interrupted, func() bool { return true }, 100, false)
	d.mu.Unlock()
	if got != -int32(syscall.EINTR) || time.Since(start) > 100*time.Millisecond {
		t.Errorf("wait with SIGTERM pending: %d after %v", got, time.Since(start))
	}
}

// A blocked SIGTERM raises no FUSE interrupt; the driver's loop still
// sees it pending, and so does the emulated wait, which polls for it.
func TestResetWaitSeesFatalSignalWithoutInterrupt(t *testing.T) {
	s := newResetSystem(t, time.Second, false)
	d := s.Devices[1]
	f := open(t, d, syscall.O_RDWR, 100)
	call(t, context.Background(), f, 100, ioctl.CmdNCReset, ioctl.DeviceReset{NCMap: 1})
	var pending atomic.Bool
	time.AfterFunc(20*time.Millisecond, func() { pending.Store(true) })
	d.mu.Lock()
	got := d.reset.waitLocked(context.Background(), pending.Load, 100, false)
	d.mu.Unlock()
	if got != -int32(syscall.EINTR) {
		t.Errorf("wait with SIGTERM pending and no interrupt: %d, want -EINTR", got)
	}
}

func TestSysfsResetWrite(t *testing.T) {
	s := newResetSystem(t, 30*time.Millisecond, false)
	d := s.Devices[3]
	var store func([]byte) syscall.Errno
	for _, a := range d.Attributes() {
		if a.Path == "reset" {
			store = a.Store
		}
	}
	f := open(t, d, syscall.O_RDWR, 100)
	store([]byte("1"))
	if d.State() != StateReady {
		t.Fatal("a write while the device is open reset it")
	}
	f.Flush(context.Background(), Caller{Tgid: 100})
	f.Release()
	store([]byte("1"))
	if d.State() != StateReset {
		t.Fatal("a write with nobody holding the device did not reset it")
	}
	// Opens wait for the reset to end.
	if _, errno := d.Open(context.Background(), Caller{Tgid: 7}, syscall.O_RDWR); errno != 0 || d.State() != StateReady {
		t.Fatalf("open during reset: %v, state %d", errno, d.State())
	}
}

// The reset goes through the firmware: the core map and type land in
// misc RAM, the status shows the reset while it runs, and a firmware
// slower than the driver's (scaled) wait makes the reset fail.
func TestResetThroughFirmware(t *testing.T) {
	s, err := NewSystem(Config{Instance: "trn2.48xlarge", ResetLatency: 100 * time.Millisecond, TimeScale: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	d := s.Devices[0]
	misc := s.Arch.MiscRAMBar0
	f := open(t, d, syscall.O_RDWR, 100)
	ctx := context.Background()
	res, v := call(t, ctx, f, 100, ioctl.CmdNCReset, ioctl.DeviceReset{NCMap: 1 << 1})
	wantErrno(t, "NC_RESET", res, 0)
	time.Sleep(20 * time.Millisecond)
	if st := d.chip.BAR0().Read32(misc + mmio.RegFirmwareStatus); st&mmio.StatusResetting == 0 {
		t.Errorf("firmware status %#x during a reset", st)
	}
	if m := d.chip.BAR0().Read32(misc + mmio.RegTPBResetMap); m != 1<<1|1<<9|1<<17 {
		t.Errorf("TPB reset map %#x for core 1", m)
	}
	_, ready := call(t, ctx, f, 100, ioctl.CmdNCResetReady, ioctl.DeviceReady{RequestID: v.RequestID})
	if ready.Result != 0 {
		t.Fatalf("reset result %d", ready.Result)
	}
	if st := d.chip.BAR0().Read32(misc + mmio.RegFirmwareStatus); st&mmio.StatusResetting != 0 {
		t.Errorf("firmware status %#x after the reset", st)
	}

	// 2 s of firmware work against a driver that waits 10 ms scaled (the
	// emulated driver waits at least minResetWait).
	slow, err := NewSystem(Config{Instance: "trn2.48xlarge", Devices: 1, ResetLatency: 4 * minResetWait, TimeScale: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(slow.Close)
	if slow.Devices[0].State() != StateInvalid {
		t.Errorf("device state %d after a probe reset the firmware did not finish in time", slow.Devices[0].State())
	}
}
