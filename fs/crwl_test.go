package fs_test

import (
	"bufio"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

func init() {
	// "writer" takes core 3's writer lock for model 7, says so, and holds
	// it until it is killed.
	helpers["writer"] = func() int {
		fd, err := unix.Open(os.Getenv("NEURONFS_ROOT")+"/dev/neuron0", unix.O_RDWR, 0)
		if err != nil {
			fmt.Println("err", err)
			return 1
		}
		v := ioctl.CRWL{NCID: 3, UUID: ioctl.UUID{Value: [32]byte{7}}}
		if r, e := testutil.Ioctl(fd, ioctl.CmdCRWLWriterEnter, &v); r != 0 || e != 0 {
			fmt.Println("err", r, e)
			return 1
		}
		fmt.Println("holding")
		select {}
	}
}

// Two processes contend for a core's writer lock through the device
// node: the second waits out the driver's budget and gets EBUSY; killing
// the holder releases the lock; a downgrade naming another model gets
// ENOENT.
func TestCRWLContentionAcrossProcesses(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	holder := helperCmd(t, "writer", "NEURONFS_ROOT="+dir)
	out, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "holding\n" {
		t.Fatalf("holder said %q", line)
	}
	fd := openDev(t, dir, 0, unix.O_RDWR)
	mine := ioctl.CRWL{NCID: 3, UUID: ioctl.UUID{Value: [32]byte{9}}}
	start := time.Now()
	r, e := testutil.Ioctl(fd, ioctl.CmdCRWLWriterEnter, &mine)
	expectErrno(t, "writer while another process holds it", r, e, 0, unix.EBUSY)
	if el := time.Since(start); el < 500*time.Millisecond {
		t.Errorf("gave up after %v: the driver retries for longer", el)
	}
	// Killed mid-hold: its last close releases the lock.
	holder.Process.Kill()
	holder.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, e = testutil.Ioctl(fd, ioctl.CmdCRWLWriterEnter, &mine)
		if r == 0 && e == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock not released by the killed holder: %d %v", r, e)
		}
	}
	// Downgrading with another model's UUID is ENOENT.
	other := ioctl.CRWL{NCID: 3, UUID: ioctl.UUID{Value: [32]byte{8}}}
	r, e = testutil.Ioctl(fd, ioctl.CmdCRWLWriterDowngrade, &other)
	expectErrno(t, "downgrade with another model's UUID", r, e, 0, unix.ENOENT)
	r, e = testutil.Ioctl(fd, ioctl.CmdCRWLWriterDowngrade, &mine)
	expectErrno(t, "downgrade", r, e, 0, 0)
}
