package device

import (
	"context"
	"encoding/json"
	"slices"
	"syscall"
	"testing"
	"time"
)

// stateOf reads the state control file and decodes it, as a client of
// the control interface does.
func stateOf(t *testing.T, s *System) HostState {
	t.Helper()
	var st HostState
	if err := json.Unmarshal([]byte(s.Sysfs().stateJSON()), &st); err != nil {
		t.Fatalf("state file is not JSON: %v", err)
	}
	return st
}

// waitDevice polls the state file until device 0 reaches state, within
// the driver's budget for a reset.
func waitDevice(t *testing.T, s *System, state string) DeviceState {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d := stateOf(t, s).Devices[0]
		if d.State == state {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("device 0 is %q (resets %+v), want %q", d.State, d.Resets, state)
		}
		time.Sleep(time.Millisecond)
	}
}

// The state file follows attaches, a reset that fails under the
// reset-fail fault, and one that succeeds once the fault is cleared.
func TestStateFollowsAttachAndResets(t *testing.T) {
	s := newTestSystem(t, "inf2.xlarge")
	st := stateOf(t, s)
	if st.Version != ControlVersion || st.Instance != "inf2.xlarge" || len(st.Devices) != 1 || len(st.Faults) != 0 {
		t.Fatalf("state = %+v", st)
	}
	d0 := st.Devices[0]
	if d0.State != "ready" || d0.Resets.Last != "ok" || d0.Resets.Count < 1 || len(d0.Cores) != s.Arch.CoresPerDevice {
		t.Fatalf("device 0 after start = %+v", d0)
	}
	if got := d0.Cores[0].Counters["reset_req_count"]; got != 1 {
		t.Errorf("core 0 reset_req_count = %d after the probe reset, want 1", got)
	}

	f := open(t, s.Devices[0], syscall.O_RDWR, 4321)
	if d := stateOf(t, s).Devices[0]; !slices.Equal(d.PIDs, []int32{4321}) || d.Opens != 1 {
		t.Errorf("attached: pids %v opens %d, want [4321] 1", d.PIDs, d.Opens)
	}
	f.Flush(context.Background(), Caller{Tgid: 4321})
	f.Release()
	if d := stateOf(t, s).Devices[0]; len(d.PIDs) != 0 || d.Opens != 0 {
		t.Errorf("released: pids %v opens %d, want none", d.PIDs, d.Opens)
	}

	if err := s.Faults().Apply("reset-fail"); err != nil {
		t.Fatal(err)
	}
	if st := stateOf(t, s); !slices.Equal(st.Faults, []string{"reset-fail"}) {
		t.Errorf("faults = %q, want [reset-fail]", st.Faults)
	}
	before := stateOf(t, s).Devices[0].Resets.Count
	s.Devices[0].storeReset([]byte("1\n"))
	d := waitDevice(t, s, "invalid")
	if d.Resets.Last != "failed" || d.Resets.Count != before+1 || d.Cores[0].Counters["reset_fail_count"] != 1 {
		t.Errorf("after a failed reset: %+v, core 0 counters %v", d.Resets, d.Cores[0].Counters)
	}
	// The driver's own answer agrees: an invalid device refuses opens.
	if _, errno := s.Devices[0].Open(context.Background(), Caller{Tgid: 4321}, syscall.O_RDWR); errno != syscall.EINVAL {
		t.Errorf("open of the invalid device: %v, want EINVAL", errno)
	}

	if err := s.Faults().Apply("none"); err != nil {
		t.Fatal(err)
	}
	s.Devices[0].storeReset([]byte("1\n"))
	deadline := time.Now().Add(10 * time.Second)
	for d = stateOf(t, s).Devices[0]; d.Resets.Count != before+2 && time.Now().Before(deadline); d = stateOf(t, s).Devices[0] {
		time.Sleep(time.Millisecond)
	}
	if d.State != "ready" || d.Resets.Last != "ok" || d.Resets.Count != before+2 {
		t.Errorf("after the fault is cleared and the device reset: %+v", d)
	}
}

// The version file is the interface's version, one line.
func TestControlFiles(t *testing.T) {
	s := newTestSystem(t, "inf2.xlarge")
	files := map[string]Attr{}
	for _, a := range s.Sysfs().ControlAttributes() {
		files[a.Path] = a
	}
	for _, name := range []string{FaultsFile, VersionFile, StateFile, MemoryFile, CoresFile} {
		if _, ok := files[name]; !ok {
			t.Errorf("no control file %q", name)
		}
	}
	if got := files[VersionFile].Show(); got != "1\n" {
		t.Errorf("version = %q, want \"1\\n\"", got)
	}
	// A rejected fault list changes nothing, in the faults file and the
	// state alike.
	if errno := files[FaultsFile].Store([]byte("reset-fail,bogus\n")); errno != syscall.EINVAL {
		t.Errorf("bad list: %v, want EINVAL", errno)
	}
	if st := stateOf(t, s); len(st.Faults) != 0 {
		t.Errorf("faults after a rejected list = %q", st.Faults)
	}
	if errno := files[FaultsFile].Store([]byte("dma-stall,ecc-hbm=3\n")); errno != 0 {
		t.Fatal(errno)
	}
	if st := stateOf(t, s); !slices.Equal(st.Faults, []string{"dma-stall", "ecc-hbm=3"}) {
		t.Errorf("faults = %q, want [dma-stall ecc-hbm=3]", st.Faults)
	}
}
