package fs_test

import (
	"bufio"
	"fmt"
	"os"
	"testing"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

func init() {
	// "dmaqueue" queues a 64 MiB copy on core 1's engine 17 (queue 4),
	// reports the queue, and waits for stdin to close.
	helpers["dmaqueue"] = func() int {
		d, err := runtime.Host{Root: os.Getenv("NEURONFS_ROOT")}.Open(0)
		if err != nil {
			fmt.Println("err", err)
			return 1
		}
		const size = 64 << 20
		src, err1 := d.Alloc(size, runtime.AllocOptions{Core: 1})
		dst, err2 := d.Alloc(size, runtime.AllocOptions{Core: 1, Channel: 1})
		q, err3 := d.InitQueue(17, 4, 2048, runtime.AllocOptions{Host: true})
		if err1 != nil || err2 != nil || err3 != nil {
			fmt.Println("err", err1, err2, err3)
			return 1
		}
		if err := q.Submit(pieces(src.PA, dst.PA, size)); err != nil {
			fmt.Println("err", err)
			return 1
		}
		fmt.Println("queued")
		bufio.NewReader(os.Stdin).ReadString('\n')
		return 0
	}
}

// A reset requested by one process while another has DMA queued on the
// core: the reset completes, the other process's queue comes back
// stopped and empty, and its later exit changes nothing further.
func TestResetWhileAnotherProcessQueuedDMA(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	cmd := helperCmd(t, "dmaqueue", "NEURONFS_ROOT="+dir)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "queued\n" {
		t.Fatalf("helper said %q", line)
	}
	dev, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if err := dev.Reset(1 << 1); err != nil {
		t.Fatalf("reset with another process's DMA queued: %v", err)
	}
	tx, rx, err := dev.QueueState(17, 4)
	if err != nil {
		t.Fatal(err)
	}
	if tx.SWStatus != uint32(dma.QueueDisabled) || rx.Length != 0 {
		t.Errorf("the other process's queue after the reset: TX %+v RX %+v", tx, rx)
	}
	// The owner's exit then puts its queue on the dummy ring.
	in.Close()
	cmd.Wait()
	tx, _, err = dev.QueueState(17, 4)
	if err != nil {
		t.Fatal(err)
	}
	if tx.Length != 64 || tx.SWStatus != uint32(dma.QueueEnabled) {
		t.Errorf("queue after its owner left: %+v, want the 64-descriptor dummy ring", tx)
	}
}
