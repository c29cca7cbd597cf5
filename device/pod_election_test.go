package device

import (
	"context"
	"encoding/binary"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/pod"
)

// podSystems builds one UltraServer host per serial, all in one pod of
// the in-process coordinator, at slots in order.
func podSystems(t *testing.T, c *pod.Local, name string, size int, serials ...uint64) []*System {
	t.Helper()
	var out []*System
	for i, serial := range serials {
		s, err := NewSystem(Config{Instance: "trn2u.48xlarge", NodeSerial: serial, Pod: pod.Config{
			Pod: name, Size: size, Slot: i, Coordinator: c, Retry: time.Millisecond, Timeout: 20 * time.Second, Extension: time.Second,
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		out = append(out, s)
	}
	return out
}

func waitPod(t *testing.T, s *System) pod.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return s.Pod().Wait(ctx)
}

func podStatusV2(t *testing.T, s *System) (Result, ioctl.PodStatusV2) {
	t.Helper()
	f := open(t, s.Devices[3], syscall.O_WRONLY, 100)
	return call(t, context.Background(), f, 100, ioctl.CmdPodStatusV2, ioctl.PodStatusV2{V1: ioctl.PodStatus{Sz: 276, State: 9}, Mode: 7})
}

func classAttr(s *System, name string) string {
	for _, a := range s.Sysfs().ClassAttributes() {
		if a.Path == name {
			return a.Show()
		}
	}
	return "missing"
}

func TestPodElectionFourServers(t *testing.T) {
	serials := []uint64{0x5000_0000_0000_0004, 0x5000_0000_0000_0001, 0x5000_0000_0000_0003, 0x5000_0000_0000_0002}
	systems := podSystems(t, pod.NewLocal(), "four", 4, serials...)
	seen := map[int8]bool{}
	for i, s := range systems {
		if st := waitPod(t, s); st != pod.StateSuccess {
			t.Fatalf("server %d: %v", i, st)
		}
		res, v := podStatusV2(t, s)
		id := v.V1.NodeID
		if res != 0 || v.V1.Sz != 276 || v.V1.State != pod.UserUltraServer || v.V1.PodType != pod.TypeP2P || v.V1.PodSz != 4 ||
			binary.LittleEndian.Uint64(v.V1.PodID[:]) != serials[1] || v.Mode != 0 || v.ModesSupported != 1<<1|1<<3|1<<4 || seen[id] || id < 0 || id > 3 {
			t.Fatalf("server %d: %d %+v", i, res, v)
		}
		seen[id] = true
		if got := classAttr(s, "node_id_4"); got != fmt.Sprintf("%d\n", id) {
			t.Errorf("server %d node_id_4 %q", i, got)
		}
		if got := classAttr(s, "ultraserver_mode"); got != "1,3,4\n" {
			t.Errorf("server %d ultraserver_mode %q", i, got)
		}
		if got := s.dieFlipped(); got != (id == 1 || id == 3) {
			t.Errorf("server %d (node %d): die flipped %v", i, id, got)
		}
		// The result is kept in device 0's misc RAM.
		if w := pod.UnpackStatus(s.podRAM.ReadMisc(0, pod.RegStatus)); w.Sts != pod.MRSuccess || int8(w.NodeID) != id || w.NodeCnt != 4 {
			t.Errorf("server %d misc RAM %+v", i, w)
		}
	}
	// The lowest serial (slot 1) leads; slot 2 sits opposite it.
	if _, v := podStatusV2(t, systems[1]); v.V1.NodeID != 0 {
		t.Errorf("leader is node %d", v.V1.NodeID)
	}
	if _, v := podStatusV2(t, systems[2]); v.V1.NodeID != 2 {
		t.Errorf("opposite the leader: node %d", v.V1.NodeID)
	}
}

func TestPodElectionTwoServersAndModes(t *testing.T) {
	systems := podSystems(t, pod.NewLocal(), "two", 2, 0x900, 0x300)
	for i, s := range systems {
		if st := waitPod(t, s); st != pod.StateSuccess {
			t.Fatalf("server %d: %v", i, st)
		}
	}
	ctx := context.Background()
	s := systems[0] // serial 0x900: node 1
	f := open(t, s.Devices[0], syscall.O_WRONLY, 100)
	res, info := call(t, ctx, f, 100, ioctl.CmdPodInfo, ioctl.PodInfo{Sz: 260})
	if res != 0 || info.PodType != pod.TypeP2P || info.PodSz != 2 || binary.LittleEndian.Uint64(info.PodID[:]) != 0x300 {
		t.Errorf("POD_INFO %d %+v", res, info)
	}
	if got := classAttr(s, "node_id_2") + classAttr(s, "server_id_2") + classAttr(s, "node_id_4") + classAttr(s, "ultraserver_mode"); got != "1\n0000000000000300\n-1\n2,3,4\n" {
		t.Errorf("class attributes %q", got)
	}
	// X4 is not supported by a 2-node pod: ENOTSUPP (errno 524).
	res, ctl := call(t, ctx, f, 100, ioctl.CmdPodCtrlV2, ioctl.PodCtrlV2{V1: ioctl.PodCtrl{Sz: 20, Ctrl: pod.CtrlSetMode, State: 9}, Mode: uint32(pod.ModeX4)})
	wantErrno(t, "SET_MODE X4", res, ioctl.ENOTSUPP)
	if ctl.V1.State != pod.UserUltraServer {
		t.Errorf("state after a refused mode: %d", ctl.V1.State)
	}
	// The V1 struct has no mode: SET_MODE asks for UNSET, never supported.
	res, _ = call(t, ctx, f, 100, ioctl.CmdPodCtrl, ioctl.PodCtrl{Sz: 16, Ctrl: pod.CtrlSetMode})
	wantErrno(t, "V1 SET_MODE", res, ioctl.ENOTSUPP)
	res, ctl = call(t, ctx, f, 100, ioctl.CmdPodCtrlV2, ioctl.PodCtrlV2{V1: ioctl.PodCtrl{Sz: 20, Ctrl: pod.CtrlSetMode}, Mode: uint32(pod.ModeX2H)})
	if res != 0 || ctl.V1.State != pod.UserUltraServer {
		t.Errorf("SET_MODE X2H: %d %+v", res, ctl)
	}
	res, _ = call(t, ctx, f, 100, ioctl.CmdPodCtrlV2, ioctl.PodCtrlV2{V1: ioctl.PodCtrl{Sz: 20, Ctrl: pod.CtrlSetMode}, Mode: uint32(pod.ModeX2V)})
	wantErrno(t, "X2V over X2H", res, syscall.EEXIST)
	res, _ = call(t, ctx, f, 100, ioctl.CmdPodCtrlV2, ioctl.PodCtrlV2{V1: ioctl.PodCtrl{Sz: 20, Ctrl: 7}})
	wantErrno(t, "ctrl 7", res, syscall.EINVAL)
	res, _ = call(t, ctx, f, 100, ioctl.CmdPodCtrlV2, ioctl.PodCtrlV2{V1: ioctl.PodCtrl{Sz: 16}})
	wantErrno(t, "POD_CTRL_V2 with sz 16", res, syscall.EINVAL)

	// A marked core blocks an election on demand (EAGAIN); its unmark
	// drops the operating mode.
	var bm [8]uint64
	s.mu.Lock()
	s.cores.table.mark(1, 0, 0, 100, &bm)
	s.mu.Unlock()
	res, ctl = call(t, ctx, f, 100, ioctl.CmdPodCtrlV2, ioctl.PodCtrlV2{V1: ioctl.PodCtrl{Sz: 20, Ctrl: pod.CtrlReqPod, Timeout: 5}})
	wantErrno(t, "REQ_POD with a marked core", res, syscall.EAGAIN)
	if _, v := podStatusV2(t, s); v.Mode != uint32(pod.ModeX2H) || v.V1.NodeID != 1 {
		t.Errorf("mode before unmark: %+v", v)
	}
	s.cores.unmarkAll(100)
	if _, v := podStatusV2(t, s); v.Mode != uint32(pod.ModeUnset) {
		t.Errorf("mode after unmark: %d", v.Mode)
	}
	// Both servers elect again on demand.
	for _, x := range systems {
		g := open(t, x.Devices[0], syscall.O_WRONLY, 100)
		res, ctl := call(t, ctx, g, 100, ioctl.CmdPodCtrl, ioctl.PodCtrl{Sz: 16, Ctrl: pod.CtrlReqPod, Timeout: 20})
		if res != 0 || ctl.State != pod.UserInProgress {
			t.Errorf("REQ_POD: %d %+v", res, ctl)
		}
	}
	for i, x := range systems {
		if st := waitPod(t, x); st != pod.StateSuccess {
			t.Errorf("server %d re-election: %v", i, st)
		}
	}
}

func TestPodBusyAndKill(t *testing.T) {
	// One server of a 2-node pod whose peer never comes.
	systems := podSystems(t, pod.NewLocal(), "alone", 2, 0x77)
	s := systems[0]
	res, v := podStatusV2(t, s)
	wantErrno(t, "POD_STATUS while electing", res, syscall.EBUSY)
	if v.V1.State != pod.UserInProgress || v.V1.NodeID != -1 || v.V1.Sz != 276 {
		t.Errorf("struct while electing: %+v", v)
	}
	if got := classAttr(s, "node_id_4") + classAttr(s, "server_id_4") + classAttr(s, "ultraserver_mode"); got != "busy\n0000000000000000\nbusy\n" {
		t.Errorf("class attributes while electing: %q", got)
	}
	ctx := context.Background()
	f := open(t, s.Devices[0], syscall.O_WRONLY, 100)
	res, _ = call(t, ctx, f, 100, ioctl.CmdPodCtrl, ioctl.PodCtrl{Sz: 16, Ctrl: pod.CtrlReqSingleNode})
	wantErrno(t, "single node while electing", res, syscall.EBUSY)
	res, ctl := call(t, ctx, f, 100, ioctl.CmdPodCtrl, ioctl.PodCtrl{Sz: 16, Ctrl: pod.CtrlReqKill})
	if res != 0 {
		t.Errorf("kill: %d %+v", res, ctl)
	}
	if st := waitPod(t, s); st != pod.StateFailure {
		t.Fatalf("after kill: %v", st)
	}
	res, v = podStatusV2(t, s)
	if res != 0 || v.V1.State != pod.UserSingleNode || v.V1.NodeID != -1 || v.V1.PodSz != 0 || v.ModesSupported != 1<<4 {
		t.Errorf("after kill: %d %+v", res, v)
	}
}

func TestPodUltraServerWithoutPod(t *testing.T) {
	s := newTestSystem(t, "trn2u.48xlarge")
	if st := waitPod(t, s); st != pod.StateFailure {
		t.Fatalf("a server with no cables: %v", st)
	}
	res, v := podStatusV2(t, s)
	if res != 0 || v.V1.State != pod.UserSingleNode || v.V1.PodType != pod.TypeP2P || v.V1.NodeID != -1 {
		t.Errorf("%d %+v", res, v)
	}
	// A whole-device reset does not re-elect once a decision was made.
	d := s.Devices[2]
	d.mu.Lock()
	d.reset.startLocked(ncMapDevice, 55)
	d.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	if s.Pod().State() != pod.StateFailure {
		t.Errorf("after a reset: %v", s.Pod().State())
	}
}

func TestPodPDS(t *testing.T) {
	s := newTestSystem(t, "trn3s.48xlarge")
	if s.Instance.Platform != dhal.PlatformPDS {
		t.Fatal(s.Instance.Platform)
	}
	res, v := podStatusV2(t, s)
	if res != 0 || v.V1.State != pod.UserUltraServer || v.V1.PodType != pod.TypeSwitch || v.V1.PodSz != 2 ||
		v.V1.NodeID != int8(s.Instance.ServerID) || binary.LittleEndian.Uint64(v.V1.PodID[:]) != 1 || v.ModesSupported != 1<<3|1<<4 {
		t.Errorf("PDS status %d %+v", res, v)
	}
	f := open(t, s.Devices[0], syscall.O_WRONLY, 100)
	res, ctl := call(t, context.Background(), f, 100, ioctl.CmdPodCtrl, ioctl.PodCtrl{Sz: 16, Ctrl: pod.CtrlReqPod})
	if res != 0 || ctl.State != pod.UserUltraServer {
		t.Errorf("PDS REQ_POD: %d %+v", res, ctl)
	}
	if s.dieFlipped() {
		t.Error("PDS die-flipped")
	}
	if got := classAttr(s, "ultraserver_mode"); got != "3,4\n" {
		t.Errorf("PDS ultraserver_mode %q", got)
	}
	s4, err := NewSystem(Config{Instance: "trn3s.48xlarge", Pod: pod.Config{PDSNodeCount: 4, PDSServerID: 0xabc}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s4.Close)
	if _, v := podStatusV2(t, s4); v.V1.PodSz != 4 || binary.LittleEndian.Uint64(v.V1.PodID[:]) != 0xabc {
		t.Errorf("PDS with 4 nodes: %+v", v)
	}
}
