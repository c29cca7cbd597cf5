package fs_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

// A slow request on a device where a core's program hangs names the hang
// in its log line: which engine waits at which record for what. Here two
// engines wait for semaphore 7, which nothing will raise, and a reset of
// another core (NC_RESET_READY waits the firmware's reset latency) is the
// slow request.
func TestSlowRequestNamesBlockedCore(t *testing.T) {
	const latency = 300 * time.Millisecond
	out := &syncBuffer{}
	l := logrus.New()
	l.SetOutput(out)
	l.SetLevel(logrus.WarnLevel)
	d := testutil.StartDaemonOptions(t, device.Config{Instance: "trn2.48xlarge", ResetLatency: latency, TimeScale: 3 * latency.Seconds()}, fs.Options{Log: logrus.NewEntry(l)})
	c := newProgClientOn(t, d.Dir, d.Sys)
	img := c.image(seq.NewWait(seq.WaitSemGE, inferenceStart, 1), seq.NewWait(seq.WaitSemGE, 7, 1), seq.NewRecord(seq.OpHalt))
	c.deliver([seq.NumEngines]uint64{img, 0, img})
	if err := c.dev.Doorbell(progCore, inferenceStart, 1); err != nil {
		t.Fatal(err)
	}
	c.waitStates(2, seq.Waiting)
	blocked := d.Sys.Device(0).Chip().BlockedCores()
	if len(blocked) != 1 || !strings.HasPrefix(blocked[0].String(), fmt.Sprintf("core %d: PE waits at %#x", progCore, img+seq.RecordSize)) ||
		!strings.Contains(blocked[0].String(), "; POOL waits at") || !strings.Contains(blocked[0].String(), "for semaphore 7 >= 1 (now 0)") {
		t.Fatalf("blocked cores %q", blocked)
	}
	d.FS.SetBudgetHook(func(op string, cmd uint32, b time.Duration) time.Duration {
		if op == "ioctl" && cmd == ioctl.CmdNCResetReady {
			return latency / 4
		}
		return b
	})
	start := time.Now()
	if err := c.dev.Reset(1 << 0); err != nil { // core 0: core 1's program stays
		t.Fatal(err)
	}
	if took := time.Since(start); took < latency {
		t.Fatalf("the reset took %v, less than its latency: the test proves nothing", took)
	}
	var line string
	testutil.WaitFor(t, "the slow-request line", 10*time.Second, func() bool {
		line = regexp.MustCompile(`(?m)^.*msg="slow request".*$`).FindString(out.String())
		return line != ""
	})
	for _, want := range []string{"command=NEURON_IOCTL_NC_RESET_READY", "blocked=\"core 1: PE waits at", "POOL waits at", "for semaphore 7 >= 1 (now 0)"} {
		if !strings.Contains(line, want) {
			t.Errorf("slow-request line lacks %q: %s", want, line)
		}
	}
	// Released, the core is no longer blocked.
	if err := c.dev.SemaphoreWrite(progCore, 7, 1); err != nil {
		t.Fatal(err)
	}
	c.waitStates(2, seq.Halted)
	if b := d.Sys.Device(0).Chip().BlockedCores(); len(b) != 0 {
		t.Errorf("blocked cores %q after the semaphore came", b)
	}
}
