package device

import (
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/ioctl"
)

// Budgets come from the driver's constants, plus the slack; families
// routed by _IOC_NR share their member's budget.
func TestBudgets(t *testing.T) {
	s := newTestSystem(t, "trn2.3xlarge")
	for _, tc := range []struct {
		cmd  uint32
		name string
		want time.Duration
	}{
		{ioctl.CmdCRWLWriterEnter, "NEURON_IOCTL_CRWL_WRITER_ENTER", withSlack(3 * time.Second)},
		{ioctl.CmdCRWLReaderEnter, "NEURON_IOCTL_CRWL_READER_ENTER", withSlack(750 * time.Millisecond)},
		{ioctl.CmdCInitSetState, "NEURON_IOCTL_CINIT_SET_STATE", withSlack(5 * time.Second)},
		{ioctl.CmdMemCopyAsyncWait, "NEURON_IOCTL_MEM_COPY_ASYNC_WAIT", withSlack(time.Second)},
		{ioctl.CmdDeviceInfo, "NEURON_IOCTL_DEVICE_INFO", withSlack(defaultBudget)},
		{ioctl.CmdNCResetReady, "NEURON_IOCTL_NC_RESET_READY", withSlack(s.budgets.reset)},
	} {
		if got := s.CommandName(tc.cmd); got != tc.name {
			t.Errorf("CommandName(%#x) = %q, want %q", tc.cmd, got, tc.name)
		}
		if got := s.Budget(tc.cmd); got != tc.want {
			t.Errorf("Budget(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
	// At the default time scale, a reset wait is bounded by the V3
	// initiate limit (480 s scaled: 0.48 s) and the completion reads
	// (at least minResetWait), twice over.
	if b := s.budgets.reset; b < 2*minResetWait || b > 2*(time.Second+minResetWait) {
		t.Errorf("reset budget %v at scale %g", b, DefaultTimeScale)
	}
	// Another size of a family member is the same command for the driver.
	memcpy := ioctl.CmdMemCopy64&^(0x3fff<<16) | 0x30<<16
	if got := s.CommandName(memcpy); got == "" || s.Budget(memcpy) != withSlack(copyBudget) {
		t.Errorf("MEM_COPY with size 0x30: name %q budget %v", got, s.Budget(memcpy))
	}
	if got, want := s.Budget(0xdead), withSlack(defaultBudget); s.CommandName(0xdead) != "" || got != want {
		t.Errorf("unknown command: %q %v", s.CommandName(0xdead), got)
	}
	if s.OpenBudget() != withSlack(s.budgets.reset) || s.FlushBudget() != withSlack(s.budgets.reset+stopRunsWait) || s.ReleaseBudget() != withSlack(defaultBudget) {
		t.Errorf("open %v flush %v release %v", s.OpenBudget(), s.FlushBudget(), s.ReleaseBudget())
	}
}
