package testbed_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/testbed"
)

// fatalTB records a Fatalf instead of ending the test.
type fatalTB struct {
	testing.TB
	failed string
}

func (r *fatalTB) Fatalf(f string, a ...any) { r.failed = fmt.Sprintf(f, a...) }

// Where nothing can be mounted ($NEURONFS_ASSUME_CONTAINER=1 stands in
// for an unprivileged container), the testbed serves the filter view: a
// command opens /dev/neuron0 and asks DEVICE_BASIC_INFO, the state shows
// the fault injected and the open's reset; the test process has no tree.
func TestFilterViewCommand(t *testing.T) {
	t.Setenv("NEURONFS_ASSUME_CONTAINER", "1")
	r := &fatalTB{TB: t}
	tb := testbed.New(r, testbed.Instance("inf2.xlarge"))
	if r.failed != "" || !tb.FilterView() {
		t.Fatalf("New: %q, filter view %v", r.failed, tb.FilterView())
	}
	cmd := tb.Command(os.Args[0])
	cmd.Env = append(os.Environ(), ioctlEnv+"=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("DEVICE_BASIC_INFO inside the filter view: %v\n%s", err, out)
	}
	if err := tb.InjectFaults("reset-fail"); err != nil {
		t.Fatal(err)
	}
	if st, err := tb.State(); err != nil || strings.Join(st.Faults, ",") != "reset-fail" || st.Devices[0].Resets.Count == 0 {
		t.Fatalf("state: faults %q, device 0 %+v (%v); want reset-fail on, the open's reset counted", st.Faults, st.Devices[0].Resets, err)
	}
	if err := tb.InjectFaults("bogus"); err == nil || !strings.Contains(err.Error(), `unknown fault "bogus"`) {
		t.Errorf("bad list: %v", err)
	}
	tb.Root()
	if !strings.Contains(r.failed, "filter view") || strings.Contains(r.failed, "\n") {
		t.Errorf("Root under the filter view: %q, want one line naming the filter view", r.failed)
	}
}
