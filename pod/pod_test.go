package pod

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ram is a server's misc RAM for tests.
type ram struct {
	mu   sync.Mutex
	regs map[[2]uint32]uint32
}

func newRAM(devices int, node uint64) *ram {
	r := &ram{regs: map[[2]uint32]uint32{}}
	for d := 0; d < devices; d++ {
		s := node + uint64(d)<<40
		r.WriteMisc(d, RegSerialLo, uint32(s))
		r.WriteMisc(d, RegSerialHi, uint32(s>>32))
	}
	return r
}

func (r *ram) ReadMisc(dev int, off uint32) uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.regs[[2]uint32{uint32(dev), off}]
}

func (r *ram) WriteMisc(dev int, off uint32, v uint32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.regs[[2]uint32{uint32(dev), off}] = v
}

const testDevices = 4

func testConfig(c Coordinator, size int) Config {
	return Config{Devices: testDevices, Pod: "p", Size: size, Slot: -1, Coordinator: c,
		Timeout: 5 * time.Second, Extension: time.Second, Retry: time.Millisecond}
}

// startPod builds one election per serial, in slot order, and resets all
// their devices, which starts the elections.
func startPod(t *testing.T, cfgs []Config, serials []uint64) ([]*Election, []*ram) {
	t.Helper()
	var es []*Election
	var rams []*ram
	for i, s := range serials {
		if cfgs[i].Slot == -1 && cfgs[i].Coordinator != nil {
			cfgs[i].Slot = i // join order is up to the scheduler
		}
		r := newRAM(cfgs[i].Devices, s)
		e := New(cfgs[i], r)
		t.Cleanup(e.Close)
		es, rams = append(es, e), append(rams, r)
	}
	for _, e := range es {
		for d := 0; d < e.cfg.Devices; d++ {
			e.OnReset(d, true)
		}
	}
	return es, rams
}

func waitAll(t *testing.T, es []*Election) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, e := range es {
		if st := e.Wait(ctx); st == StateInProgress || st == StateInit {
			t.Fatalf("node %d: election still %v", i, st)
		}
	}
}

// ring computes what each slot of a pod sees: left, right and diagonal.
func ring(size int, serials []uint64, slot int) (l, r, d uint64) {
	l = serials[neighbor(size, slot, Left)]
	r = serials[neighbor(size, slot, Right)]
	d = serials[neighbor(size, neighbor(size, slot, Left), Right)]
	return
}

func permutations(a []uint64) [][]uint64 {
	if len(a) <= 1 {
		return [][]uint64{append([]uint64(nil), a...)}
	}
	var out [][]uint64
	for i := range a {
		rest := append(append([]uint64(nil), a[:i]...), a[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]uint64{a[i]}, p...))
		}
	}
	return out
}

func TestNodeIDsAreConsistent(t *testing.T) {
	for _, perm := range permutations([]uint64{10, 20, 30, 40}) {
		seen := map[int]bool{}
		for slot := range 4 {
			l, r, d := ring(4, perm, slot)
			id, n, serial := NodeID(perm[slot], l, r, d, LinkBoth)
			if n != 4 || serial != 10 || seen[id] || id < 0 || id > 3 {
				t.Fatalf("%v slot %d: id %d count %d serial %d (seen %v)", perm, slot, id, n, serial, seen)
			}
			if (id == 0) != (perm[slot] == 10) {
				t.Errorf("%v: slot %d (serial %d) is node %d", perm, slot, perm[slot], id)
			}
			// Node 2 sits diagonally opposite node 0.
			if id == 2 && d != 10 {
				t.Errorf("%v: node 2 at slot %d is not opposite the leader", perm, slot)
			}
			seen[id] = true
		}
	}
	for _, lr := range []uint8{LinkBoth, LinkLeft, LinkRight} {
		a, _, sa := NodeID(5, 9, 9, 5, lr)
		b, n, sb := NodeID(9, 5, 5, 9, lr)
		if a != 0 || b != 1 || n != 2 || sa != 5 || sb != 5 {
			t.Errorf("2 nodes over %#x: %d %d %d %d %d", lr, a, b, n, sa, sb)
		}
	}
}

func TestModalMapping(t *testing.T) {
	four := func(id int) Result { return Result{NodeID: id, NodeCount: 4, PodSerial: 100, LRMask: LinkBoth} }
	for id, want := range [][4]int{
		// X4, X2H, X2V, X1
		{0, 0, 0, -1}, {1, 0, 1, -1}, {2, 1, 0, -1}, {3, 1, 1, -1},
	} {
		r := four(id)
		for i, m := range []Mode{ModeX4, ModeX2H, ModeX2V, ModeX1} {
			if got := r.ModalNodeID(m); got != want[i] {
				t.Errorf("node %d mode %d: id %d, want %d", id, m, got, want[i])
			}
		}
		wantX2V := uint64(100)
		if id >= 2 {
			wantX2V = 99
		}
		if r.ModalSerial(ModeX2V) != wantX2V || r.ModalSerial(ModeX1) != 0 || r.ModalSerial(ModeX4) != 100 {
			t.Errorf("node %d serials: %d %d %d", id, r.ModalSerial(ModeX2V), r.ModalSerial(ModeX1), r.ModalSerial(ModeX4))
		}
		if r.ModalNodeCount(ModeX2V) != 2 || r.ModalNodeCount(ModeX4) != 4 || r.ModalNodeCount(ModeX1) != 0 {
			t.Errorf("node %d counts wrong", id)
		}
	}
	if got := four(0).ModesSupported(); got != 1<<ModeX4|1<<ModeX2V|1<<ModeX1 {
		t.Errorf("4-node modes %#x", got)
	}
	two := Result{NodeID: 1, NodeCount: 2, PodSerial: 7, LRMask: LinkBoth}
	if got := two.ModesSupported(); got != 1<<ModeX2H|1<<ModeX2V|1<<ModeX1 {
		t.Errorf("2-node modes %#x", got)
	}
	if two.ModalNodeID(ModeX4) != -1 || two.ModalSerial(ModeX4) != 0 || two.ModalNodeCount(ModeX4) != 0 {
		t.Error("X4 on a 2-node pod")
	}
	if (Result{NodeID: -1}).ModesSupported() != 1<<ModeX1 {
		t.Error("a failed election supports more than X1")
	}
}

func TestStatusWord(t *testing.T) {
	w := PackStatus(MRSuccess, LinkRight, -1, 4)
	if w != 0x04ff0203 {
		t.Fatalf("%#x", w)
	}
	if s := UnpackStatus(w); s != (Status{Sts: MRSuccess, LRMask: LinkRight, NodeID: 0xff, NodeCnt: 4}) {
		t.Fatalf("%+v", s)
	}
}

func checkPod(t *testing.T, es []*Election, rams []*ram, serials []uint64, size int) {
	t.Helper()
	min := serials[0]
	for _, s := range serials {
		min = (map[bool]uint64{true: s, false: min})[s < min]
	}
	seen := map[int]bool{}
	for i, e := range es {
		res := e.Result()
		if e.State() != StateSuccess || res.NodeCount != size || res.PodSerial != min || seen[res.NodeID] || res.NodeID < 0 || res.NodeID >= size {
			t.Fatalf("node %d: %v %+v", i, e.State(), res)
		}
		seen[res.NodeID] = true
		st := UnpackStatus(rams[i].ReadMisc(0, RegStatus))
		if st.Sts != MRSuccess || int(st.NodeID) != res.NodeID || int(st.NodeCnt) != size || st.LRMask != res.LRMask {
			t.Errorf("node %d misc RAM status %+v", i, st)
		}
		if rams[i].ReadMisc(0, RegPodSerialLo) != uint32(min) || rams[i].ReadMisc(0, RegLeftSerialHi) != 0 {
			t.Errorf("node %d: pod serial or leftover election data in misc RAM", i)
		}
		if state, id, errno := e.Status(); state != UserUltraServer || int(id) != res.NodeID || errno != 0 {
			t.Errorf("node %d status %d %d %v", i, state, id, errno)
		}
	}
}

func TestElectionFourNodes(t *testing.T) {
	c := NewLocal()
	serials := []uint64{0x4000, 0x1000, 0x3000, 0x2000}
	cfgs := make([]Config, 4)
	for i := range cfgs {
		cfgs[i] = testConfig(c, 4)
	}
	es, rams := startPod(t, cfgs, serials)
	waitAll(t, es)
	checkPod(t, es, rams, serials, 4)
	// Slot 1 holds the lowest serial: node 0; slot 2 is opposite: node 2.
	if es[1].Result().NodeID != 0 || es[2].Result().NodeID != 2 {
		t.Errorf("slot 1 is node %d, slot 2 node %d", es[1].Result().NodeID, es[2].Result().NodeID)
	}
	if got := es[0].ClassModes(); got != "1,3,4\n" {
		t.Errorf("ultraserver_mode %q", got)
	}
	// node_id_2 uses X2V on a 4-node pod; server_id_2 differs per half.
	for i, e := range es {
		id := e.Result().NodeID
		if got, want := e.ClassNodeID(2), fmt.Sprintf("%d\n", x2vNode[id]); got != want {
			t.Errorf("node %d node_id_2 %q want %q", i, got, want)
		}
		if got, want := e.ClassNodeID(4), fmt.Sprintf("%d\n", id); got != want {
			t.Errorf("node %d node_id_4 %q", i, got)
		}
	}
}

func TestElectionTwoNodes(t *testing.T) {
	c := NewLocal()
	serials := []uint64{0x9000, 0x5000}
	es, rams := startPod(t, []Config{testConfig(c, 2), testConfig(c, 2)}, serials)
	waitAll(t, es)
	checkPod(t, es, rams, serials, 2)
	if es[1].Result().NodeID != 0 || es[0].ClassModes() != "2,3,4\n" || es[0].ClassNodeID(4) != "-1\n" || es[0].ClassServerID(2) != "0000000000005000\n" {
		t.Errorf("2-node result %+v modes %q", es[1].Result(), es[0].ClassModes())
	}
}

func TestLameDuckRightLink(t *testing.T) {
	c := NewLocal()
	c.Hub("p").CutLink(0, Left, true)
	serials := []uint64{0x7000, 0x8000}
	es, rams := startPod(t, []Config{testConfig(c, 2), testConfig(c, 2)}, serials)
	waitAll(t, es)
	checkPod(t, es, rams, serials, 2)
	if r := es[0].Result(); r.LRMask != LinkRight || es[0].ClassModes() != "2,4\n" {
		t.Errorf("after losing the left link: %+v modes %q", r, es[0].ClassModes())
	}
}

func TestInjectedLinkFaultsLameDuck(t *testing.T) {
	c := NewLocal()
	cfgs := []Config{testConfig(c, 2), testConfig(c, 2)}
	cfgs[0].Ctl = CtlFaultRightLink
	cfgs[1].Ctl = CtlFaultRightLink
	serials := []uint64{0x7000, 0x6000}
	es, rams := startPod(t, cfgs, serials)
	waitAll(t, es)
	checkPod(t, es, rams, serials, 2)
	if r := es[0].Result(); r.LRMask != LinkLeft || es[0].ClassModes() != "3,4\n" {
		t.Errorf("after right-link faults: %+v modes %q", r, es[0].ClassModes())
	}
}

func wantFailure(t *testing.T, e *Election) {
	t.Helper()
	if e.State() != StateFailure {
		t.Fatalf("state %v, want failure", e.State())
	}
	if state, id, errno := e.Status(); state != UserSingleNode || id != -1 || errno != 0 {
		t.Errorf("status %d %d %v", state, id, errno)
	}
	if e.ClassNodeID(4) != "-1\n" || e.ClassModes() != "4\n" || e.ClassServerID(4) != "0000000000000000\n" {
		t.Errorf("class attributes after failure: %q %q", e.ClassNodeID(4), e.ClassModes())
	}
}

func TestCutLinksFail(t *testing.T) {
	c := NewLocal()
	c.Hub("p").CutLink(0, Left, true)
	c.Hub("p").CutLink(0, Right, true)
	es, rams := startPod(t, []Config{testConfig(c, 2), testConfig(c, 2)}, []uint64{1 << 20, 2 << 20})
	waitAll(t, es)
	for i, e := range es {
		wantFailure(t, e)
		if st := UnpackStatus(rams[i].ReadMisc(0, RegStatus)); st.Sts != MRFailure {
			t.Errorf("node %d misc RAM %+v", i, st)
		}
	}
}

func TestNoCablesFails(t *testing.T) {
	es, _ := startPod(t, []Config{testConfig(nil, 4)}, []uint64{1 << 20})
	waitAll(t, es)
	wantFailure(t, es[0])
}

func TestDeadPeerFails(t *testing.T) {
	c := NewLocal()
	// Slot 1 joins, then dies.
	p, err := c.Join(context.Background(), Join{Pod: "p", Size: 2, Slot: 1})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	start := time.Now()
	es, _ := startPod(t, []Config{testConfig(c, 2)}, []uint64{1 << 20})
	waitAll(t, es)
	wantFailure(t, es[0])
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a dead peer took %v to notice", d)
	}
}

func TestAbsentPeerTimesOut(t *testing.T) {
	c := NewLocal()
	cfg := testConfig(c, 2)
	cfg.Timeout, cfg.Extension = 100*time.Millisecond, 50*time.Millisecond
	es, _ := startPod(t, []Config{cfg}, []uint64{1 << 20})
	waitAll(t, es)
	wantFailure(t, es[0])
}

func TestKill(t *testing.T) {
	c := NewLocal()
	cfg := testConfig(c, 2)
	cfg.Timeout = time.Hour
	es, _ := startPod(t, []Config{cfg}, []uint64{1 << 20}) // the peer never comes
	e := es[0]
	if state, id, errno := e.Status(); state != UserInProgress || id != -1 || errno != syscall.EBUSY {
		t.Fatalf("while electing: %d %d %v", state, id, errno)
	}
	if e.ClassNodeID(2) != "busy\n" || e.ClassModes() != "busy\n" || e.ClassServerID(2) != "0000000000000000\n" {
		t.Error("class attributes while electing")
	}
	if _, errno := e.Ctrl(CtrlSetMode, ModeX1, 0); errno != syscall.EBUSY {
		t.Errorf("SET_MODE while electing: %v", errno)
	}
	if state, errno := e.Ctrl(CtrlReqKill, 0, 0); errno != 0 || state != UserInProgress {
		t.Errorf("kill: %d %v", state, errno)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if st := e.Wait(ctx); st != StateFailure {
		t.Fatalf("after kill: %v", st)
	}
	wantFailure(t, e)
}

func TestCtrl(t *testing.T) {
	c := NewLocal()
	marked := 0
	cfgs := make([]Config, 4)
	for i := range cfgs {
		cfgs[i] = testConfig(c, 4)
		cfgs[i].MarkedCores = func() int { return marked }
	}
	es, _ := startPod(t, cfgs, []uint64{1 << 20, 2 << 20, 3 << 20, 4 << 20})
	waitAll(t, es)
	e := es[3] // node 3 (the right neighbour of the leader's column)
	if _, errno := e.Ctrl(CtrlSetMode, ModeX2H, 0); errno != ENOTSUPP {
		t.Errorf("X2H on 4 nodes: %v", errno)
	}
	if _, errno := e.Ctrl(CtrlSetMode, ModeUnset, 0); errno != ENOTSUPP {
		t.Errorf("UNSET: %v", errno)
	}
	if state, errno := e.Ctrl(CtrlSetMode, ModeX2V, 0); errno != 0 || state != UserUltraServer {
		t.Errorf("X2V: %d %v", state, errno)
	}
	if info := e.Info(); info.Mode != ModeX2V || info.Size != 2 || info.Type != TypeP2P || info.Serial != (1<<20)-1 {
		t.Errorf("info in X2V: %+v", info)
	}
	if _, errno := e.Ctrl(CtrlSetMode, ModeX4, 0); errno != syscall.EEXIST {
		t.Errorf("X4 over X2V: %v", errno)
	}
	if _, errno := e.Ctrl(CtrlSetMode, ModeX2V, 0); errno != 0 {
		t.Errorf("X2V again: %v", errno)
	}
	e.NotifyUnmark(3)
	if _, errno := e.Ctrl(CtrlReqSingleNode, 0, 0); errno != syscall.EEXIST {
		t.Errorf("single node over X2V: %v", errno)
	}
	e.NotifyUnmark(0)
	if state, errno := e.Ctrl(CtrlReqSingleNode, 0, 0); errno != 0 || state != UserSingleNode {
		t.Errorf("single node: %d %v", state, errno)
	}
	if _, id, _ := e.Status(); id != -1 {
		t.Errorf("X1 node id %d", id)
	}
	if _, errno := e.Ctrl(9, 0, 0); errno != syscall.EINVAL {
		t.Errorf("ctrl 9: %v", errno)
	}
	marked = 1
	if _, errno := e.Ctrl(CtrlReqPod, 0, 1); errno != syscall.EAGAIN {
		t.Errorf("REQ_POD with marked cores: %v", errno)
	}
	marked = 0
	e.NotifyUnmark(0)
	// A new election on demand, on every node.
	for _, x := range es {
		if state, errno := x.Ctrl(CtrlReqPod, 0, 10); errno != 0 || state != UserInProgress {
			t.Errorf("REQ_POD: %d %v", state, errno)
		}
	}
	waitAll(t, es)
	for _, x := range es {
		if x.State() != StateSuccess {
			t.Errorf("re-election: %v", x.State())
		}
	}
}

func TestCtrlBeforeReset(t *testing.T) {
	e := New(testConfig(nil, 4), newRAM(testDevices, 1))
	defer e.Close()
	e.OnReset(1, true)
	if _, errno := e.Ctrl(CtrlReqPod, 0, 1); errno != syscall.EAGAIN {
		t.Errorf("REQ_POD before every device reset: %v", errno)
	}
	if state, errno := e.Ctrl(CtrlReqKill, 0, 0); errno != 0 || state != UserSingleNode || e.State() != StateFailure {
		t.Errorf("kill in INIT: %d %v %v", state, errno, e.State())
	}
}

func TestCachedResultAndSkip(t *testing.T) {
	r := newRAM(testDevices, 1)
	r.WriteMisc(0, RegStatus, PackStatus(MRSuccess, LinkBoth, 2, 4))
	r.WriteMisc(0, RegPodSerialLo, 0x1234)
	e := New(testConfig(nil, 4), r)
	defer e.Close()
	e.OnReset(0, true)
	if e.State() != StateSuccess || e.Result() != (Result{NodeID: 2, NodeCount: 4, PodSerial: 0x1234, LRMask: LinkBoth}) {
		t.Errorf("cached: %v %+v", e.State(), e.Result())
	}
	cfg := testConfig(nil, 4)
	cfg.Ctl = CtlSkipElectionAtReset | CtlClearMiscRAM
	e2 := New(cfg, r)
	defer e2.Close()
	e2.OnReset(0, true)
	if e2.State() != StateFailure || r.ReadMisc(0, RegStatus) != 0 || r.ReadMisc(0, RegPodSerialLo) != 0 {
		t.Errorf("skip+clear: %v %#x", e2.State(), r.ReadMisc(0, RegStatus))
	}
}

func TestPDS(t *testing.T) {
	e := New(Config{Kind: KindPDS, ServerID: 1}, newRAM(16, 1))
	defer e.Close()
	if _, _, errno := e.Status(); errno != syscall.EBUSY {
		t.Errorf("PDS before any reset: %v", errno)
	}
	e.OnReset(5, true)
	state, id, errno := e.Status()
	info := e.Info()
	if state != UserUltraServer || id != 1 || errno != 0 || info.Type != TypeSwitch || info.Size != 2 || info.Serial != 1 || info.ModesSupported != 1<<ModeX2V|1<<ModeX1 {
		t.Errorf("PDS: %d %d %v %+v", state, id, errno, info)
	}
	if _, errno := e.Ctrl(CtrlReqPod, 0, 0); errno != 0 {
		t.Errorf("REQ_POD on PDS: %v", errno)
	}
	if e.ClassModes() != "3,4\n" || e.ClassNodeID(2) != "1\n" || e.ClassServerID(2) != "0000000000000001\n" {
		t.Errorf("PDS class: %q %q %q", e.ClassModes(), e.ClassNodeID(2), e.ClassServerID(2))
	}
	e4 := New(Config{Kind: KindPDS, PDSNodeCount: 4, PDSServerID: 0x77}, newRAM(16, 1))
	defer e4.Close()
	e4.OnReset(0, true)
	if r := e4.Result(); r.NodeCount != 4 || r.NodeID != 0 || r.PodSerial != 0x77 || e4.ClassModes() != "1,3,4\n" {
		t.Errorf("PDS 4: %+v %q", r, e4.ClassModes())
	}
}

func TestHubCutsAndRestarts(t *testing.T) {
	ctx := context.Background()
	c := NewLocal()
	h := c.Hub("p")
	h.CutLink(3, Left, true) // in a 4-node pod: the link between slots 3 and 1
	var ports [4]Port
	for i := range ports {
		p, err := c.Join(ctx, Join{Pod: "p", Size: 4, Slot: -1})
		if err != nil || p.Slot() != i {
			t.Fatal(i, err)
		}
		ports[i] = p
	}
	for _, x := range []struct {
		slot int
		side Side
		cut  bool
	}{{1, Left, true}, {3, Left, true}, {1, Right, false}, {0, Left, false}, {2, Right, false}} {
		_, err := ports[x.slot].Read(ctx, x.side, 0, RegStatus, 1)
		if (err == ErrLink) != x.cut {
			t.Errorf("slot %d %s: %v", x.slot, x.side, err)
		}
	}
	h.CutLink(3, Left, false)
	if _, err := ports[1].Read(ctx, Left, 0, RegStatus, 1); err != nil {
		t.Errorf("mended link: %v", err)
	}
	// Members that left read as gone; once everybody left, the pod can be
	// rebuilt with another size, where nobody reads as gone.
	ports[0].Close()
	if _, err := ports[2].Read(ctx, Left, 0, RegStatus, 1); err != ErrLink {
		t.Errorf("read of a departed member: %v", err)
	}
	for _, p := range ports[1:] {
		p.Close()
	}
	p, err := c.Join(ctx, Join{Pod: "p", Size: 2, Slot: 1})
	if err != nil {
		t.Fatal(err)
	}
	if w, err := p.Read(ctx, Left, 0, RegStatus, 1); err != nil || w[0] != 0 {
		t.Errorf("rebuilt pod: %v %v", w, err)
	}
	if m := h.Members(); len(m) != 1 || m[0] != 1 {
		t.Errorf("members %v", m)
	}
}
