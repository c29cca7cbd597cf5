package testbed_test

import (
	"context"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/runtime"
	"github.com/neuronfs/neuronfs/testbed"
)

// The state follows what a client does to a core: the semaphore it
// increments, the notification queue it binds and the START and END
// records an exec doorbell writes there, the host memory the ring holds
// and the process attached.
func TestStateFollowsAClient(t *testing.T) {
	tb := testbed.New(t, testbed.Instance("trn2.3xlarge"))
	d, err := runtime.Host{Root: tb.Root()}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const core = 0
	if err := d.Reset(1 << core); err != nil {
		t.Fatal(err)
	}
	q, err := d.InitNQ(core, runtime.NQTypeNotify, runtime.InferStatusSlot, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	d.EnableNQs(core, 1<<runtime.InferStatusSlot)
	if err := d.Doorbell(core, 5, 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 2 {
		if _, err := q.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st, err := tb.State()
	if err != nil {
		t.Fatal(err)
	}
	dev := st.Devices[0]
	if len(dev.PIDs) != 1 {
		t.Errorf("pids %v, want this process", dev.PIDs)
	}
	c := dev.Cores[core]
	if c.Semaphores["5"] != 1 {
		t.Errorf("core %d semaphores %v, want 5: 1", core, c.Semaphores)
	}
	var found bool
	for _, nq := range c.Queues {
		if nq.Slot == runtime.InferStatusSlot && nq.Size == 4096 && nq.Enabled && nq.Records == 2 && nq.Tail == 2*16 {
			found = true
		}
	}
	if !found {
		t.Errorf("core %d queues %+v, want slot %d with 2 records", core, c.Queues, runtime.InferStatusSlot)
	}
	if c.Memory["host_mem"] == 0 {
		t.Errorf("core %d memory %v: the ring's host memory is not counted", core, c.Memory)
	}
}
