package device

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip"
)

// powerAttr reads stats/power/utilization of d the way sysfs shows it.
func powerAttr(t *testing.T, d *Device) string {
	t.Helper()
	for _, a := range d.Attributes() {
		if a.Path == "stats/power/utilization" {
			return a.Show()
		}
	}
	t.Fatal("no stats/power/utilization")
	return ""
}

// runMinute drives the minute from start (a minute boundary), one tick
// per firmware period with the device busy for busy(i) in period i; the
// last tick is at the next boundary, which rolls the minute up.
func runMinute(s *System, start time.Time, busy func(i int) time.Duration) time.Time {
	n := int(time.Minute / powerPeriod)
	for i := 1; i <= n; i++ {
		s.Devices[0].chip.AddBusy(busy(i))
		s.sampler.tick(start.Add(time.Duration(i)*powerPeriod), powerPeriod)
	}
	return start.Add(time.Minute)
}

// The attribute follows the driver's rules: NO_DATA from the load until a
// minute with enough samples, then VALID with that minute's min, max and
// average, stamped at each minute boundary.
func TestPowerUtilization(t *testing.T) {
	before := time.Now().Unix()
	s := newTestSystem(t, "trn2.3xlarge") // two dies
	s.sampler.halt()
	d := s.Devices[0]
	var at int64
	if _, err := fmt.Sscanf(powerAttr(t, d), "POWER_STATUS_NO_DATA,%d,0.00,0.00,0.00\n", &at); err != nil || at < before || at > time.Now().Unix() {
		t.Fatalf("after load: %q (%v), want NO_DATA stamped with the load time", powerAttr(t, d), err)
	}

	start := time.Unix(1_800_000_000, 0) // a minute boundary
	s.sampler.tick(start, powerPeriod)
	if got, want := powerAttr(t, d), fmt.Sprintf("POWER_STATUS_NO_DATA,%d,0.00,0.00,0.00\n", start.Unix()); got != want {
		t.Fatalf("first boundary: %q, want %q", got, want)
	}
	// 10% and 30% busy in turn: VALID, 10.00, 30.00, average 20.00.
	end := runMinute(s, start, func(i int) time.Duration {
		if i%2 == 0 {
			return powerPeriod * 3 / 10
		}
		return powerPeriod / 10
	})
	if got, want := powerAttr(t, d), fmt.Sprintf("POWER_STATUS_VALID,%d,10.00,30.00,20.00\n", end.Unix()); got != want {
		t.Fatalf("busy minute: %q, want %q", got, want)
	}
	// Within a minute the attribute does not move.
	s.sampler.tick(end.Add(30*time.Second), powerPeriod)
	if got := powerAttr(t, d); !strings.HasPrefix(got, fmt.Sprintf("POWER_STATUS_VALID,%d,", end.Unix())) {
		t.Fatalf("mid-minute: %q", got)
	}
	// Copies count too; more than the period's worth is 100%.
	s.Devices[0].chip.AddBytes(chip.BusyBytesPerSecond) // a second of work in one period
	end2 := runMinute(s, end, func(int) time.Duration { return 0 })
	if got, want := powerAttr(t, d), fmt.Sprintf("POWER_STATUS_VALID,%d,0.00,100.00,", end2.Unix()); !strings.HasPrefix(got, want) {
		t.Fatalf("copy minute: %q, want %s...", got, want)
	}
	// Fewer than 60 samples: NO_DATA. A sample read twice counts once.
	for i := 1; i <= 59; i++ {
		now := end2.Add(time.Duration(i) * powerPeriod)
		s.sampler.tick(now, powerPeriod)
		d.power.sample(now) // the firmware has not published again
	}
	if d.power.n != 59 {
		t.Fatalf("%d samples kept, want 59", d.power.n)
	}
	end3 := end2.Add(time.Minute)
	d.power.sample(end3)
	if got, want := powerAttr(t, d), fmt.Sprintf("POWER_STATUS_NO_DATA,%d,0.00,0.00,0.00\n", end3.Unix()); got != want {
		t.Fatalf("short minute: %q, want %q", got, want)
	}
}

// Under power-invalid the firmware publishes utilisation beyond 100%: the
// driver drops every sample and the minute has no data.
func TestPowerInvalidFault(t *testing.T) {
	s := newTestSystem(t, "trn1.2xlarge")
	s.sampler.halt()
	if err := s.Faults().Apply("power-invalid"); err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1_800_000_000, 0)
	s.sampler.tick(start, powerPeriod)
	end := runMinute(s, start, func(int) time.Duration { return powerPeriod / 2 })
	if got, want := powerAttr(t, s.Devices[0]), fmt.Sprintf("POWER_STATUS_NO_DATA,%d,0.00,0.00,0.00\n", end.Unix()); got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	if err := s.Faults().Apply("-power-invalid"); err != nil {
		t.Fatal(err)
	}
	end = runMinute(s, end, func(int) time.Duration { return powerPeriod / 2 })
	if got, want := powerAttr(t, s.Devices[0]), fmt.Sprintf("POWER_STATUS_VALID,%d,50.00,50.00,50.00\n", end.Unix()); got != want {
		t.Fatalf("after the fault: %q, want %q", got, want)
	}
}

// On the hardware emulator and QEMU the driver never samples: the
// attribute keeps its initial NO_DATA at time 0.
func TestPowerSimulatedRevisions(t *testing.T) {
	for _, rev := range []uint32{240, 255} {
		s, err := NewSystem(Config{Instance: "trn1.2xlarge", Revision: rev})
		if err != nil {
			t.Fatal(err)
		}
		s.sampler.halt()
		runMinute(s, time.Unix(1_800_000_000, 0), func(int) time.Duration { return powerPeriod / 2 })
		if got := powerAttr(t, s.Devices[0]); got != "POWER_STATUS_NO_DATA,0,0.00,0.00,0.00\n" {
			t.Errorf("revision %d: %q", rev, got)
		}
		s.Close()
	}
}
