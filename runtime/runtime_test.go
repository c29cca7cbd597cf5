package runtime_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

func TestDiscoveryAndReservation(t *testing.T) {
	dir, sys := testutil.Mount(t, "trn2.48xlarge")
	h := runtime.Host{Root: dir}
	idx, err := h.DeviceIndices()
	if err != nil || len(idx) != 16 || idx[15] != 15 {
		t.Fatalf("indices %v %v", idx, err)
	}
	if v, err := h.DriverVersion(); err != nil || v != "2.25.4.0" {
		t.Fatalf("version %q %v", v, err)
	}
	d, err := h.Open(3)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	bi, err := d.BasicInfo()
	if err != nil || bi.Architecture != 3 {
		t.Fatalf("basic info %+v %v", bi, err)
	}
	if id, err := d.HostDeviceID(); err != nil || id != 3 {
		t.Fatalf("host device id %d %v", id, err)
	}
	if min, max, err := d.CompatibleVersion(); err != nil || min != 10 || max != 11 {
		t.Fatalf("compatible version %d..%d %v", min, max, err)
	}
	if di, err := d.DriverInfo(); err != nil || di.Architecture != bi.Architecture || di.Size != 24 || di.FeatureFlags1 != sys.Table.Features {
		t.Fatalf("driver info %+v %v", di, err)
	}
	addr, err := d.PCIAddress()
	b := sys.Instance.BDFs[3]
	if err != nil || addr != b.String() {
		t.Fatalf("PCI address %q, want %q (%v)", addr, b.String(), err)
	}

	m, err := h.OpenMisc(3)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got, err := m.MarkCores(8, 0, 7)
	if err != nil || got != 0xff {
		t.Fatalf("mark 8 cores: %#x %v", got, err)
	}
	_, err = m.MarkCores(1, 0, 7)
	var rerr *runtime.Error
	if !errors.As(err, &rerr) || rerr.Cmd != "CRWL_NC_RANGE_MARK" || !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("marking a full device: %v, want CRWL_NC_RANGE_MARK EBUSY", err)
	}
	if err := m.UnmarkCores(0xff); err != nil {
		t.Fatal(err)
	}
	if _, err := m.MarkCores(2, 0, 7); err != nil {
		t.Fatalf("mark after unmark: %v", err)
	}
	if err := d.Reset(0b11); err != nil {
		t.Fatalf("reset of the marked cores: %v", err)
	}
}
