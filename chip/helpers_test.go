package chip

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/dhal"
)

// testDriver is a driver with no allocations, no queues, no neighbours,
// no faults and no limit; it counts executions and the bytes touched.
type testDriver struct{ inferences, touched atomic.Uint64 }

func (*testDriver) Admit(pa, n uint64) bool                        { return true }
func (d *testDriver) Touched(n uint64)                             { d.touched.Add(n) }
func (*testDriver) Allocation(uint64) (base, size uint64, ok bool) { return 0, 0, false }
func (*testDriver) DeviceDrivenQueues(int) [][2]int                { return nil }
func (*testDriver) Peer(int) *Chip                                 { return nil }
func (*testDriver) HostOwner(uint64) *Chip                         { return nil }
func (d *testDriver) Count(_ int, name string, n uint64) {
	if name == "other_info/inference_count" {
		d.inferences.Add(n)
	}
}
func (*testDriver) Faults() Faults {
	no := func() bool { return false }
	return Faults{DMA: func() (bool, uint32) { return false, 0 }, ResetFail: no, FWIOFail: no, PowerInvalid: no}
}

// newTestChip builds device 0 of instance, stopped and closed at the
// test's end.
func newTestChip(t *testing.T, instance string) *Chip {
	c, _ := newTestChipDriver(t, instance)
	return c
}

// newTestChipDriver is newTestChip that also returns its driver.
func newTestChipDriver(t testing.TB, instance string) (*Chip, *testDriver) {
	t.Helper()
	return newTestChipWith(t, instance, nil)
}

// newTestChipWith is newTestChipDriver with set changing the config.
func newTestChipWith(t testing.TB, instance string, set func(*Config)) (*Chip, *testDriver) {
	t.Helper()
	drv := &testDriver{}
	return newTestChipOn(t, instance, set, drv), drv
}

// newTestChipOn is newTestChipWith over the driver drv.
func newTestChipOn(t testing.TB, instance string, set func(*Config), drv Driver) *Chip {
	t.Helper()
	inst, err := dhal.LookupInstance(instance)
	if err != nil {
		t.Fatal(err)
	}
	f, err := dhal.Facts(inst.Product.Arch)
	if err != nil {
		t.Fatal(err)
	}
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	cfg := Config{Name: "neuron0", Arch: f, Log: logrus.NewEntry(l), Epoch: time.Now(), InferenceStart: -1}
	if set != nil {
		set(&cfg)
	}
	c, err := New(cfg, drv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		c.Close()
	})
	return c
}
