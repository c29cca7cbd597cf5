package fs_test

import (
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/mmio"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

// Copies through the driver show up in the firmware's power samples
// (misc RAM 0x054/0x058, read with BAR_READ as a monitoring agent would):
// a new sample number each firmware period, with utilisation above zero
// for a period with copies in it, and every die equal.
func TestPowerSamplesFollowCopies(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.3xlarge")
	d, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f, err := dhal.Facts(dhal.V3)
	if err != nil {
		t.Fatal(err)
	}
	regs := []uint64{f.MiscRAMBar0 + mmio.RegPowerUtilDie0, f.MiscRAMBar0 + mmio.RegPowerUtilDie1}
	read := func() []uint32 {
		t.Helper()
		v, err := d.ReadRegisters(regs...)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	m, err := d.Alloc(64<<20, runtime.AllocOptions{MemType: ioctl.MemTypeTensorsDevice})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<20)
	first := read()
	seen := map[uint32]bool{}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := m.Write(0, buf); err != nil {
			t.Fatal(err)
		}
		v := read()
		if v[0] != v[1] {
			t.Fatalf("dies disagree: %#x %#x", v[0], v[1])
		}
		if v[0]>>16 != first[0]>>16 && v[0]&0xffff > 0 {
			seen[v[0]>>16] = true
			if len(seen) >= 2 {
				return // two busy periods, each a new sample
			}
		}
		if v[0]&0xffff > 10000 {
			t.Fatalf("utilisation %d bips beyond 100%%", v[0]&0xffff)
		}
	}
	t.Fatalf("no busy samples in 5 s of copies (first %#x, last %#x)", first[0], read()[0])
}
