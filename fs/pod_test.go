package fs_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/pod"
)

// waitElected waits until the mount's class attributes stop saying busy.
func waitElected(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for testutil.ClassFile(t, dir, "ultraserver_mode") == "busy\n" {
		if time.Now().After(deadline) {
			t.Fatal("still electing")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func podStatus(t *testing.T, dir string) (int, unix.Errno, ioctl.PodStatusV2) {
	t.Helper()
	fd := openDev(t, dir, 5, unix.O_WRONLY)
	v := ioctl.PodStatusV2{V1: ioctl.PodStatus{Sz: 276, State: 77}, Mode: 9}
	r, e := testutil.Ioctl(fd, ioctl.CmdPodStatusV2, &v)
	return r, e, v
}

func podCtrl(t *testing.T, dir string, ctrl uint32, mode pod.Mode) (int, unix.Errno, ioctl.PodCtrlV2) {
	t.Helper()
	fd := openDev(t, dir, 0, unix.O_WRONLY)
	v := ioctl.PodCtrlV2{V1: ioctl.PodCtrl{Sz: 20, Ctrl: ctrl, Timeout: 30, State: 77}, Mode: uint32(mode)}
	r, e := testutil.Ioctl(fd, ioctl.CmdPodCtrlV2, &v)
	return r, e, v
}

// Two daemons (two mounts with their own socket coordinators, as two
// neuronfs processes would have) elect a 2-node pod over the Unix socket.
func TestPodTwoDaemonsOverSocket(t *testing.T) {
	name := fmt.Sprintf("fs-test-%d", os.Getpid())
	serials := []uint64{0xb0b0_0000_0000_0002, 0xb0b0_0000_0000_0001}
	var dirs []string
	for i, serial := range serials {
		sock := pod.NewSocket(nil)
		t.Cleanup(func() { sock.Close() })
		dir, _ := testutil.MountConfig(t, device.Config{Instance: "trn2u.48xlarge", NodeSerial: serial, Pod: pod.Config{
			Pod: name, Size: 2, Slot: i, Coordinator: sock, Retry: time.Millisecond, Timeout: 30 * time.Second,
		}})
		dirs = append(dirs, dir)
	}
	ids := map[int8]bool{}
	for i, dir := range dirs {
		waitElected(t, dir)
		r, e, v := podStatus(t, dir)
		if r != 0 || e != 0 || v.V1.State != pod.UserUltraServer || v.V1.PodType != pod.TypeP2P || v.V1.PodSz != 2 ||
			binary.LittleEndian.Uint64(v.V1.PodID[:]) != serials[1] || v.ModesSupported != 1<<2|1<<3|1<<4 || v.Mode != 0 {
			t.Fatalf("daemon %d: %d %v %+v", i, r, e, v)
		}
		ids[v.V1.NodeID] = true
		want := fmt.Sprintf("%d\n", v.V1.NodeID)
		if got := testutil.ClassFile(t, dir, "node_id_2"); got != want {
			t.Errorf("daemon %d node_id_2 %q, want %q", i, got, want)
		}
		if got := testutil.ClassFile(t, dir, "server_id_2"); got != fmt.Sprintf("%016x\n", serials[1]) {
			t.Errorf("daemon %d server_id_2 %q", i, got)
		}
		if got := testutil.ClassFile(t, dir, "node_id_4") + testutil.ClassFile(t, dir, "server_id_4") + testutil.ClassFile(t, dir, "ultraserver_mode"); got != "-1\n0000000000000000\n2,3,4\n" {
			t.Errorf("daemon %d: %q", i, got)
		}
		// Device 0 carries the node serial.
		b, _ := os.ReadFile(filepath.Join(dir, "sys/devices/virtual/neuron_device/neuron0/info/serial_number"))
		if string(b) != fmt.Sprintf("%016x\n", serials[i]) {
			t.Errorf("daemon %d serial_number %q", i, b)
		}
	}
	if !ids[0] || !ids[1] {
		t.Fatalf("node ids %v", ids)
	}

	// Modes through the bridge: ENOTSUPP arrives as errno 524.
	r, e, v := podCtrl(t, dirs[0], pod.CtrlSetMode, pod.ModeX4)
	if r != -1 || e != unix.Errno(ioctl.ENOTSUPP) {
		t.Errorf("SET_MODE X4: %d %v", r, e)
	}
	r, e, v = podCtrl(t, dirs[0], pod.CtrlSetMode, pod.ModeX2V)
	if r != 0 || e != 0 || v.V1.State != pod.UserUltraServer {
		t.Errorf("SET_MODE X2V: %d %v %+v", r, e, v)
	}
	if r, e, _ := podCtrl(t, dirs[0], pod.CtrlReqSingleNode, 0); r != -1 || e != unix.EEXIST {
		t.Errorf("single node over X2V: %d %v", r, e)
	}
	if _, _, s := podStatus(t, dirs[0]); s.Mode != uint32(pod.ModeX2V) {
		t.Errorf("mode %d", s.Mode)
	}
	// The V1 command with a V2 size field is refused.
	fd := openDev(t, dirs[0], 0, unix.O_WRONLY)
	v1 := ioctl.PodCtrl{Sz: 20}
	if r, e := testutil.Ioctl(fd, ioctl.CmdPodCtrl, &v1); r != -1 || e != unix.EINVAL {
		t.Errorf("POD_CTRL with sz 20: %d %v", r, e)
	}
}

// A server whose peer never comes: busy (EBUSY, struct copied out) until
// killed, then a single node.
func TestPodBusyThenKilled(t *testing.T) {
	dir, _ := testutil.MountConfig(t, device.Config{Instance: "trn2u.48xlarge", NodeSerial: 0x42, Pod: pod.Config{
		Pod: "lonely", Size: 2, Coordinator: pod.NewLocal(), Retry: time.Millisecond, Timeout: time.Hour,
	}})
	r, e, v := podStatus(t, dir)
	if r != -1 || e != unix.EBUSY || v.V1.State != pod.UserInProgress || v.V1.NodeID != -1 || v.V1.Sz != 276 || v.Mode != 0 {
		t.Errorf("while electing: %d %v %+v", r, e, v)
	}
	if got := testutil.ClassFile(t, dir, "node_id_2") + testutil.ClassFile(t, dir, "ultraserver_mode") + testutil.ClassFile(t, dir, "server_id_2"); got != "busy\nbusy\n0000000000000000\n" {
		t.Errorf("class while electing %q", got)
	}
	if r, e, _ := podCtrl(t, dir, pod.CtrlSetMode, pod.ModeX1); r != -1 || e != unix.EBUSY {
		t.Errorf("SET_MODE while electing: %d %v", r, e)
	}
	if r, e, _ := podCtrl(t, dir, pod.CtrlReqKill, 0); r != 0 || e != 0 {
		t.Errorf("kill: %d %v", r, e)
	}
	waitElected(t, dir)
	r, e, v = podStatus(t, dir)
	if r != 0 || e != 0 || v.V1.State != pod.UserSingleNode || v.V1.NodeID != -1 || v.ModesSupported != 1<<4 {
		t.Errorf("after kill: %d %v %+v", r, e, v)
	}
	if got := testutil.ClassFile(t, dir, "node_id_4") + testutil.ClassFile(t, dir, "ultraserver_mode"); got != "-1\n4\n" {
		t.Errorf("class after kill %q", got)
	}
	// An election on demand needs no marked core: mark one first.
	mfd := openDev(t, dir, 0, unix.O_WRONLY)
	mark := ioctl.CRWLNCMap{NCCount: 1, StartNCIndex: 0, EndNCIndex: 7}
	if r, e := testutil.Ioctl(mfd, ioctl.CmdCRWLNCRangeMark, &mark); r != 0 || e != 0 {
		t.Fatalf("mark: %d %v", r, e)
	}
	if r, e, _ := podCtrl(t, dir, pod.CtrlReqPod, 0); r != -1 || e != unix.EAGAIN {
		t.Errorf("REQ_POD with a marked core: %d %v", r, e)
	}
}

func TestPodPDS(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn3s.48xlarge")
	r, e, v := podStatus(t, dir)
	if r != 0 || e != 0 || v.V1.State != pod.UserUltraServer || v.V1.PodType != pod.TypeSwitch || v.V1.PodSz != 2 ||
		v.V1.NodeID != 0 || binary.LittleEndian.Uint64(v.V1.PodID[:]) != 1 || v.ModesSupported != 1<<3|1<<4 {
		t.Errorf("PDS POD_STATUS_V2: %d %v %+v", r, e, v)
	}
	fd := openDev(t, dir, 1, unix.O_WRONLY)
	info := ioctl.PodInfo{Sz: 260, PodType: 9}
	if r, e := testutil.Ioctl(fd, ioctl.CmdPodInfo, &info); r != 0 || e != 0 || info.PodType != pod.TypeSwitch || info.PodSz != 2 || info.PodID[0] != 1 {
		t.Errorf("PDS POD_INFO: %d %v %+v", r, e, info)
	}
	if r, e, v := podCtrl(t, dir, pod.CtrlReqPod, 0); r != 0 || e != 0 || v.V1.State != pod.UserUltraServer {
		t.Errorf("PDS REQ_POD: %d %v %+v", r, e, v)
	}
	if got := testutil.ClassFile(t, dir, "node_id_2") + testutil.ClassFile(t, dir, "server_id_2") + testutil.ClassFile(t, dir, "ultraserver_mode"); got != "0\n0000000000000001\n3,4\n" {
		t.Errorf("PDS class %q", got)
	}
}
