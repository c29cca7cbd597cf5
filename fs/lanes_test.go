package fs_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

// helpers are the modes of the test binary as a helper process.
var helpers = map[string]func() int{
	// hold opens $NEURONFS_DEV, reports the result, and keeps the file
	// open until its stdin closes.
	"hold": func() int {
		fd, err := unix.Open(os.Getenv("NEURONFS_DEV"), unix.O_RDWR, 0)
		if err != nil {
			fmt.Printf("err %d\n", err.(unix.Errno))
			return 0
		}
		fmt.Println("ok")
		io.Copy(io.Discard, os.Stdin)
		unix.Close(fd)
		return 0
	},
	// inherited uses fd 3, opened by its parent: this process never
	// opened the device, so it is not attached.
	"inherited": func() int {
		fails := 0
		check := func(name string, r int, e unix.Errno, want unix.Errno) {
			if (want == 0) != (r == 0) || e != want {
				fmt.Fprintf(os.Stderr, "%s: %d, %v; want %v\n", name, r, e, want)
				fails++
			}
		}
		var free ioctl.MemFree
		r, e := testutil.Ioctl(3, ioctl.CmdMemFree, &free)
		check("MEM_FREE (gated)", r, e, unix.EACCES)
		var di ioctl.DeviceDriverInfo
		r, e = testutil.Ioctl(3, ioctl.CmdDriverInfoSet, &di)
		check("DRIVER_INFO_SET (gated)", r, e, unix.EACCES)
		var pm ioctl.PostMetric
		r, e = testutil.Ioctl(3, ioctl.CmdPostMetric, &pm)
		check("POST_METRIC (gated)", r, e, unix.EACCES)
		// Process memory for an unattached caller oopses the real kernel.
		alloc := ioctl.MemAllocV2MemType64{Size: 4096, MemHandle: 8}
		r, e = testutil.Ioctl(3, ioctl.CmdMemAllocV2MT64, &alloc)
		check("MEM_ALLOC_V2MT64 unattached", r, e, unix.EACCES)
		var bi ioctl.DeviceBasicInfo
		r, e = testutil.Ioctl(3, ioctl.CmdDeviceBasicInfo, &bi)
		check("DEVICE_BASIC_INFO", r, e, 0)
		var info ioctl.DeviceInfo
		r, e = testutil.Ioctl(3, ioctl.CmdDeviceInfo, &info)
		check("DEVICE_INFO (main, ungated)", r, e, 0)
		if fails > 0 {
			return 1
		}
		return 0
	},
}

func helperCmd(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NEURONFS_TEST_HELPER="+mode)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// An O_WRONLY fd reaches only the misc lane.
func TestFreeAccessFdIsMiscOnly(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	fd := openDev(t, dir, 0, unix.O_WRONLY)
	var info ioctl.DeviceInfo
	r, e := testutil.Ioctl(fd, ioctl.CmdDeviceInfo, &info)
	expectErrno(t, "DEVICE_INFO on O_WRONLY", r, e, 0, unix.EINVAL)
	var free ioctl.MemFree
	r, e = testutil.Ioctl(fd, ioctl.CmdMemFree, &free)
	expectErrno(t, "MEM_FREE on O_WRONLY", r, e, 0, unix.EINVAL)
	var bi ioctl.DeviceBasicInfo
	r, e = testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi)
	expectErrno(t, "DEVICE_BASIC_INFO on O_WRONLY", r, e, 0, 0)
	var cv ioctl.CompatibleVersion
	r, e = testutil.Ioctl(fd, ioctl.CmdCompatibleVersion, &cv)
	expectErrno(t, "COMPATIBLE_VERSION on O_WRONLY", r, e, 0, 0)
	// A free-access open attaches nothing: this process is not listed.
	rd := openDev(t, dir, 1, unix.O_WRONLY)
	var pid int32 = -1
	r, e = testutil.Ioctl(rd, ioctl.CmdDeviceAppPID, &pid)
	expectErrno(t, "DEVICE_APP_PID on O_WRONLY", r, e, 0, unix.EINVAL)
}

// Attach-gated commands refuse a process that holds an inherited fd but
// never opened the device itself.
func TestAttachGate(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	f, err := os.OpenFile(dir+"/dev/neuron0", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Attached: the gate lets MEM_FREE through to its handler, which
	// refuses handle 0.
	var free ioctl.MemFree
	r, e := testutil.Ioctl(int(f.Fd()), ioctl.CmdMemFree, &free)
	expectErrno(t, "MEM_FREE attached", r, e, 0, unix.EINVAL)

	cmd := helperCmd(t, "inherited")
	cmd.ExtraFiles = []*os.File{f}
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("inherited-fd helper: %v %s", err, out)
	}
}

// Sixteen processes fill the attach table; the seventeenth gets EBUSY
// until one of them exits, even by SIGKILL.
func TestSeventeenthProcessIsBusy(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn1.2xlarge")
	dev := "NEURONFS_DEV=" + dir + "/dev/neuron0"
	type holder struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
	}
	start := func() (holder, string) {
		cmd := helperCmd(t, "hold", dev)
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		return holder{cmd, in}, strings.TrimSpace(line)
	}
	var hs []holder
	defer func() {
		for _, h := range hs {
			h.stdin.Close()
			h.cmd.Wait()
		}
	}()
	for i := 0; i < 16; i++ {
		h, res := start()
		hs = append(hs, h)
		if res != "ok" {
			t.Fatalf("holder %d: %s", i, res)
		}
	}
	h, res := start()
	hs = append(hs, h)
	if res != fmt.Sprintf("err %d", syscall.EBUSY) {
		t.Fatalf("17th process: %q, want EBUSY", res)
	}
	// This process is the 18th: refused too.
	if _, err := unix.Open(dir+"/dev/neuron0", unix.O_RDWR, 0); err != unix.EBUSY {
		t.Fatalf("open from test process: %v, want EBUSY", err)
	}
	hs[0].cmd.Process.Kill()
	hs[0].cmd.Wait()
	h, res = start()
	hs = append(hs, h)
	if res != "ok" {
		t.Fatalf("after a holder was killed: %q, want ok", res)
	}
}

// Two threads of one process are one tgid: one attach slot, one pid.
func TestThreadsShareTgid(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn1.2xlarge")
	var wg sync.WaitGroup
	tids := make([]int, 2)
	fds := make([]int, 2)
	errs := make([]error, 2)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tids[i] = unix.Gettid()
			fds[i], errs[i] = unix.Open(dir+"/dev/neuron0", unix.O_RDWR|unix.O_CLOEXEC, 0)
		}(i)
		wg.Wait()
	}
	for i := range fds {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		defer unix.Close(fds[i])
	}
	if tids[0] == tids[1] {
		t.Skip("both opens ran on one thread")
	}
	buf := make([]byte, 16+16*152)
	hdr := ioctl.GetAppsInfo{Capacity: 16}
	copy(buf, ioctl.Bytes(&hdr))
	r, e := testutil.Ioctl(fds[0], ioctl.CmdDeviceGetAllAppsInfo, (*[16 + 16*152]byte)(buf))
	expectErrno(t, "GET_ALL_APPS_INFO", r, e, 0, 0)
	hdr, _ = ioctl.Decode[ioctl.GetAppsInfo](buf)
	app, _ := ioctl.Decode[ioctl.AppInfo](buf[16:])
	if hdr.Size != 1 || app.PID != int32(os.Getpid()) {
		t.Fatalf("threads %v: %d entries, first pid %d; want one entry for pid %d", tids, hdr.Size, app.PID, os.Getpid())
	}
}
