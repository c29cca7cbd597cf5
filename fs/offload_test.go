package fs

import (
	"encoding/binary"
	"testing"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/ioctl"
)

// The io_uring transport (and Direct, which asks the same question) keeps
// an ioctl on its queue exactly when the command's row in
// device/commands.go says it may run inline, in every driver version.
func TestInlineFromCommandRows(t *testing.T) {
	for _, v := range ioctl.Versions() {
		sys, err := device.NewSystem(device.Config{Instance: "trn2.3xlarge", DriverVersion: v})
		if err != nil {
			t.Fatalf("driver %s: %v", v, err)
		}
		t.Cleanup(sys.Close)
		// defaultBudget as Mount sets it, though the decision no longer
		// compares budgets.
		f := &FS{sys: sys, defaultBudget: sys.Budget(0)}
		in := make([]byte, ioctlInCmd+4)
		for _, c := range sys.Table.Commands() {
			binary.LittleEndian.PutUint32(in[ioctlInCmd:], c.Cmd)
			if got, want := f.offload(fuseIoctl, in), !sys.Inline(c.Cmd); got != want {
				t.Errorf("driver %s: %s (%#x) offloaded %v, its row says %v", v, c.Name, c.Cmd, got, want)
			}
		}
	}
}
