package testbed_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/pod"
	"github.com/neuronfs/neuronfs/testbed"
)

// Two testbeds of one test that share an in-process coordinator form an
// UltraServer pod: the lower serial is node 0 and names the pod.
func TestPodOfTwoTestbeds(t *testing.T) {
	coord := pod.NewLocal()
	serials := []uint64{0x2000, 0x1000}
	var tbs []*testbed.Testbed
	for i, serial := range serials {
		tbs = append(tbs, testbed.New(t, testbed.Instance("trn2u.48xlarge"), testbed.Pod(pod.Config{
			Pod: "tb", Size: 2, Slot: i, Coordinator: coord, Retry: time.Millisecond, Timeout: 30 * time.Second,
		}, serial)))
	}
	for i, tb := range tbs {
		file := filepath.Join(tb.Root(), "sys/class/neuron_device/node_id_2")
		deadline := time.Now().Add(30 * time.Second)
		var got string
		for {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got = strings.TrimSpace(string(b))
			if got != "-1" || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		// The second testbed has the lower serial.
		if want := map[int]string{0: "1", 1: "0"}[i]; got != want {
			t.Errorf("testbed %d: node_id_2 %q, want %q", i, got, want)
		}
		b, _ := os.ReadFile(filepath.Join(tb.Root(), "sys/class/neuron_device/server_id_2"))
		if string(b) != "0000000000001000\n" {
			t.Errorf("testbed %d: server_id_2 %q, want the lower serial", i, b)
		}
	}
}
