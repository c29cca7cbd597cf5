package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/ioctl"
)

// buildSigalrmCheck compiles testdata/sigalrm_check.c against a header
// generated from the ABI table.
func buildSigalrmCheck(t *testing.T) string {
	t.Helper()
	return buildCClient(t, "sigalrm_check", []uint32{
		ioctl.CmdMemAllocV2MT64, ioctl.CmdMemGetExtendedInfo, ioctl.CmdMemBufCopy64, ioctl.CmdMemCopy64,
		ioctl.CmdMemset64, ioctl.CmdMemCopyAsync64, ioctl.CmdMemCopyAsyncWait, ioctl.CmdHBMScrubStart,
		ioctl.CmdHBMScrubWait, ioctl.CmdNCReset, ioctl.CmdNCResetReady, ioctl.CmdDeviceReset, ioctl.CmdDeviceReady,
		ioctl.CmdCRWLReaderEnter, ioctl.CmdCRWLReaderExit, ioctl.CmdCRWLWriterEnter, ioctl.CmdCRWLWriterDowngrade,
		ioctl.CmdDMAQueueInit, ioctl.CmdDMACopyDescriptors64, ioctl.CmdDMAQueueCopyStart,
	}, "-pthread")
}

// runClient runs CMD inside `neuronfs run` with flags, killing it after
// limit, and returns its output and error.
func runClient(t *testing.T, limit time.Duration, flags []string, cmdline ...string) (string, error) {
	t.Helper()
	cmd := neuronfs(t, append(append(append([]string{"run"}, flags...), "--"), cmdline...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(limit, func() { cmd.Process.Kill() })
	defer timer.Stop()
	err := cmd.Wait()
	return out.String(), err
}

// resetCore is a core of trn2.3xlarge no other command here uses: its
// reset leaves core 0's queues and copies alone.
const resetCore = "0x80"

// A C program with a 100 us SIGALRM interval timer (SA_RESTART) over every
// long or blocking command gets no EINTR: the driver polls its copies and
// waits and never looks at signals there. Every copy has landed when its
// wait returns.
func TestRunSIGALRMNoEINTR(t *testing.T) {
	bin := buildSigalrmCheck(t)
	out, err := runClient(t, 2*time.Minute, []string{"--instance=trn2.3xlarge"}, bin, "alarm", "1.5", resetCore)
	if err != nil || !strings.Contains(out, "sigalrm ok\n") {
		t.Fatalf("C client under a 100 us SIGALRM timer: %v\n%s", err, out)
	}
	t.Logf("\n%s", out)
}

// NC_RESET_READY and DEVICE_READY end early only for a SIGTERM (or
// SIGKILL) pending in the calling thread's own set, and say so in the
// struct (result -EINTR, byte 0), not in errno; the request stays queued.
// A SIGTERM pending for the process (shared set) does not end the wait,
// nor do other signals. The emulated reset takes 500 ms (100 ms scaled by
// 5), well inside the driver's budget (1 s scaled: 5 s), so it is still
// running when the wait begins.
func TestRunResetReadySIGTERMPending(t *testing.T) {
	bin := buildSigalrmCheck(t)
	out, err := runClient(t, 2*time.Minute, []string{"--instance=trn2.3xlarge", "--time-scale=5"}, bin, "sigterm", resetCore, "500")
	if err != nil || !strings.Contains(out, "sigterm ok\n") {
		t.Fatalf("C client with SIGTERM pending: %v\n%s", err, out)
	}
	t.Logf("\n%s", out)
}
