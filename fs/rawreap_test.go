package fs_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

func init() {
	// rawmap maps $NEURONFS_RAW_LEN bytes of $NEURONFS_DEV at offset
	// $NEURONFS_RAW_OFF, fills them with 0x5a, says "mapped" and keeps the
	// mapping until its stdin closes; each line it reads asks how many
	// bytes still hold 0x5a.
	helpers["rawmap"] = func() int {
		off, _ := strconv.ParseUint(os.Getenv("NEURONFS_RAW_OFF"), 0, 64)
		n, _ := strconv.Atoi(os.Getenv("NEURONFS_RAW_LEN"))
		fd, err := unix.Open(os.Getenv("NEURONFS_DEV"), unix.O_RDWR, 0)
		if err != nil {
			fmt.Fprintf(os.Stderr, "rawmap: open: %v\n", err)
			return 1
		}
		m, err := unix.Mmap(fd, int64(off), n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			fmt.Fprintf(os.Stderr, "rawmap: mmap: %v\n", err)
			return 1
		}
		for i := range m {
			m[i] = 0x5a
		}
		fmt.Println("mapped")
		// Each line asks how many bytes still hold what it stored.
		for sc := bufio.NewScanner(os.Stdin); sc.Scan(); {
			fmt.Println(bytes.Count(m, []byte{0x5a}))
		}
		return 0
	}
}

// A plain mount cannot refuse an mmap of memory no chunk covers (FUSE
// never sees it), so the daemon bounds what such a mapping holds: pages
// under no mapping of a task with CAP_SYS_RAWIO in the initial user
// namespace are punched at the next release, or before the limit
// refuses a write, which then fits; root's stay while mapped, count
// against the limit, and go with the mapping.
func TestRawMemoryReaped(t *testing.T) {
	t.Setenv(device.BackingEnv, "") // memfd: what the reaper covers
	const limit, rawLen, slack = 64 << 20, 80 << 20, 1 << 20
	d := testutil.StartDaemon(t, device.Config{Instance: "trn1.2xlarge", MemoryLimit: limit})
	facts := d.Sys.Arch
	raw := facts.HBMBases[0] + facts.HBMSize - 96<<20
	node := d.Dir + "/dev/neuron0"
	dev, err := runtime.Host{Root: d.Dir}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	data := bytes.Repeat([]byte{0xa5}, 16<<20)
	base := held(t, d.Sys)

	t.Run("userns-root", func(t *testing.T) {
		cmd := helperCmd(t, "rawmap", "NEURONFS_DEV="+node, fmt.Sprintf("NEURONFS_RAW_OFF=%#x", raw), "NEURONFS_RAW_LEN="+strconv.Itoa(rawLen))
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}},
		}
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		testutil.GuardProcess(t, cmd.Process.Pid)
		defer func() { in.Close(); cmd.Wait() }()
		r := bufio.NewReader(out)
		if line, _ := r.ReadString('\n'); line != "mapped\n" {
			t.Fatalf("helper said %q", line)
		}
		// 80 MiB of raw memory against a 64 MiB limit: the write gets
		// room once the pass it waits for has punched them.
		c := mustMem(t, dev, 16<<20, runtime.AllocOptions{Channel: 0})
		if err := c.Write(0, data); err != nil {
			t.Errorf("a write while a task without CAP_SYS_RAWIO maps raw memory past the limit: %v", err)
		}
		if got := held(t, d.Sys); got > base+16<<20+slack {
			t.Errorf("the backing holds %d after the write, %d more than before", got, got-base)
		}
		c.Free()
		// A pass may have run already (a release kicks one): the helper's
		// own view says whether its stores survived. (Its reads fault
		// the pages in again, as zeros.)
		fmt.Fprintln(in, "count")
		if line, _ := r.ReadString('\n'); line != "0\n" {
			t.Errorf("after a pass, %s bytes of the raw mapping of a task without CAP_SYS_RAWIO in the initial user namespace still hold its stores, want 0", strings.TrimSpace(line))
		}
	})

	t.Run("root", func(t *testing.T) {
		fd := openDev(t, d.Dir, 0, unix.O_RDWR)
		m, err := unix.Mmap(fd, int64(raw), rawLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			unix.Close(fd)
			t.Fatal(err)
		}
		for i := range m {
			m[i] = 0x77
		}
		d.FS.ReapRaw()
		if n := bytes.Count(m, []byte{0x77}); n != rawLen {
			t.Errorf("root's raw mapping after a pass: %d of %d bytes kept", n, rawLen)
		}
		c := mustMem(t, dev, 16<<20, runtime.AllocOptions{Channel: 0})
		if err := c.Write(0, data); !isErrno(err, unix.EPERM) {
			t.Errorf("a write while root's raw memory fills the limit: %v, want EPERM", err)
		}
		unix.Munmap(m)
		unix.Close(fd) // the release reaps
		// A pass may wait for the one before (rawReapInterval) and scan
		// for up to 4 budgets.
		testutil.WaitFor(t, "raw memory punched after the last mapping", 8*d.Sys.Budget(0), func() bool {
			return held(t, d.Sys) <= base+slack
		})
		if err := c.Write(0, data); err != nil {
			t.Errorf("a write after the raw mapping went: %v", err)
		}
	})
}
