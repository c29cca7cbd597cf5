package device

import (
	"context"
	"syscall"
	"testing"

	"github.com/neuronfs/neuronfs/ioctl"
)

// Sixteen slots: the seventeenth process gets ENOMEM; a released slot is
// reused, and a never-used one is preferred to a released one.
func TestDatastoreSlots(t *testing.T) {
	d := newTestSystem(t, "trn1.2xlarge").Devices[0]
	ctx := context.Background()
	f := open(t, d, syscall.O_RDWR, 1)
	offsets := map[uint64]bool{}
	for pid := int32(1); pid <= datastoreSlots; pid++ {
		res, v := call(t, ctx, f, pid, ioctl.CmdAcquireNeuronDS, ioctl.NeuronDSInfo{})
		if res != 0 || v.Size != datastoreSize || offsets[v.MmapOffset] {
			t.Fatalf("pid %d: %d %+v", pid, res, v)
		}
		offsets[v.MmapOffset] = true
	}
	res, _ := call(t, ctx, f, 99, ioctl.CmdAcquireNeuronDS, ioctl.NeuronDSInfo{})
	wantErrno(t, "17th process", res, syscall.ENOMEM)
	// Acquiring again returns the same slot.
	_, a := call(t, ctx, f, 5, ioctl.CmdAcquireNeuronDS, ioctl.NeuronDSInfo{})
	_, b := call(t, ctx, f, 5, ioctl.CmdAcquireNeuronDS, ioctl.NeuronDSInfo{})
	if a.MmapOffset != b.MmapOffset {
		t.Fatal("a second acquire moved the slot")
	}
	call(t, ctx, f, 5, ioctl.CmdReleaseNeuronDS, ioctl.NeuronDSInfo{})
	_, c := call(t, ctx, f, 99, ioctl.CmdAcquireNeuronDS, ioctl.NeuronDSInfo{})
	if c.MmapOffset != a.MmapOffset {
		t.Fatal("the released slot was not reused")
	}
}
