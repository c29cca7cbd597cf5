package pod

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

var testSecret = []byte("0123456789abcdef-test-pod-secret")

// freeAddrs returns n loopback addresses nobody listens on.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var ls []net.Listener
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

// netCoordinators returns one Net per slot, all listing the same peers on
// loopback; secrets[i] overrides slot i's secret.
func netCoordinators(t *testing.T, size int, secrets map[int][]byte) []*Net {
	t.Helper()
	addrs := freeAddrs(t, size)
	peers, err := ParsePeers(strings.Join(addrs, ","))
	if err != nil {
		t.Fatal(err)
	}
	var out []*Net
	for i := 0; i < size; i++ {
		sec := testSecret
		if s, ok := secrets[i]; ok {
			sec = s
		}
		out = append(out, &Net{Peers: peers, Secret: sec, Timeout: 500 * time.Millisecond})
	}
	return out
}

// scenario is one pod's story, told to either coordinator. node i sits at
// slot i; start runs its election (nil: the node never starts).
type scenario struct {
	name    string
	size    int
	serials []uint64
	timeout time.Duration
	// faults applied before the start: cut links (slot, side) and slots
	// holding a wrong secret (on the Local coordinator: both links cut).
	cuts        [][2]int
	wrongSecret []int
	// killMid: a node that dies mid-election (see runScenario).
	killMid int
	// devices overrides some nodes' device count: a node with fewer
	// devices than its neighbour leaves it waiting for the rest.
	devices map[int]int
}

type outcome struct {
	State State
	Res   Result
	Modes string
}

func (o outcome) String() string {
	return fmt.Sprintf("%v node %d of %d serial %#x lr %d modes %q", o.State, o.Res.NodeID, o.Res.NodeCount, o.Res.PodSerial, o.Res.LRMask, o.Modes)
}

// runScenario tells sc over the network (net true) or in process, and
// returns every surviving node's outcome (killed nodes: zero outcome).
func runScenario(t *testing.T, sc scenario, overNet bool) []outcome {
	t.Helper()
	local := NewLocal()
	var nets []*Net
	if overNet {
		bad := map[int][]byte{}
		for _, s := range sc.wrongSecret {
			bad[s] = []byte("a-different-secret-of-this-pod!!")
		}
		nets = netCoordinators(t, sc.size, bad)
	} else {
		for _, s := range sc.wrongSecret {
			local.Hub("p").CutLink(s, Left, true)
			local.Hub("p").CutLink(s, Right, true)
		}
	}
	es := make([]*Election, sc.size)
	start := func(i int) {
		var c Coordinator = local
		if overNet {
			c = nets[i]
		}
		cfg := testConfig(c, sc.size)
		cfg.Slot = i
		// Reads over loopback TCP under -race on a loaded machine are
		// slow: a pod that forms gets time to, and a lame-duck retry
		// outlasts its neighbours' arrival.
		cfg.Timeout, cfg.Extension = 30*time.Second, 2*time.Second
		if sc.timeout > 0 {
			cfg.Timeout = sc.timeout
		}
		cfg.Retry = 2 * time.Millisecond
		if n, ok := sc.devices[i]; ok {
			cfg.Devices = n
		}
		es[i] = New(cfg, newRAM(cfg.Devices, sc.serials[i]))
		t.Cleanup(es[i].Close)
		for d := 0; d < cfg.Devices; d++ {
			es[i].OnReset(d, true)
		}
	}
	cut := func() {
		for _, c := range sc.cuts {
			if overNet {
				waitPort(t, es[c[0]]).(*netPort).cutLink(Side(c[1]), true)
			} else {
				local.Hub("p").CutLink(c[0], Side(c[1]), true)
			}
		}
	}
	switch {
	case sc.killMid > 0 && sc.devices != nil:
		// Everybody starts; the node with fewer devices waits for its
		// neighbour's primary while the neighbour waits for its next
		// secondary. Then it dies.
		for i := 0; i < sc.size; i++ {
			start(i)
		}
		time.Sleep(300 * time.Millisecond)
		es[sc.killMid].Close()
	case sc.killMid > 0:
		// Everybody but slot 0 starts and gets stuck waiting for it;
		// then killMid dies and slot 0 comes.
		for i := 1; i < sc.size; i++ {
			start(i)
		}
		cut()
		time.Sleep(300 * time.Millisecond)
		es[sc.killMid].Close()
		start(0)
	default:
		for i := 0; i < sc.size; i++ {
			start(i)
			if i == 0 {
				cut()
			}
		}
	}
	out := make([]outcome, sc.size)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i, e := range es {
		if i == sc.killMid && sc.killMid > 0 {
			continue
		}
		if st := e.Wait(ctx); st != StateSuccess && st != StateFailure {
			t.Fatalf("%s: node %d still %v", sc.name, i, st)
		}
		out[i] = outcome{e.State(), e.Result(), e.ClassModes()}
	}
	return out
}

// waitPort returns e's port once its election has joined.
func waitPort(t *testing.T, e *Election) Port {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		e.mu.Lock()
		p := e.port
		e.mu.Unlock()
		if p != nil {
			return p
		}
	}
	t.Fatal("the election never joined")
	return nil
}

var netScenarios = []scenario{
	{name: "four", size: 4, serials: []uint64{0x4000, 0x1000, 0x3000, 0x2000}},
	{name: "two", size: 2, serials: []uint64{0x9000, 0x5000}},
	{name: "four-cut-link", size: 4, serials: []uint64{0x4000, 0x1000, 0x3000, 0x2000}, cuts: [][2]int{{0, int(Right)}}, timeout: 2 * time.Second},
	{name: "two-cut-left", size: 2, serials: []uint64{0x9000, 0x5000}, cuts: [][2]int{{0, int(Left)}}},
	{name: "four-wrong-secret", size: 4, serials: []uint64{0x4000, 0x1000, 0x3000, 0x2000}, wrongSecret: []int{3}, timeout: 2 * time.Second},
	{name: "two-wrong-secret", size: 2, serials: []uint64{0x9000, 0x5000}, wrongSecret: []int{1}},
	{name: "four-kill-mid-election", size: 4, serials: []uint64{0x4000, 0x1000, 0x3000, 0x2000}, killMid: 3, timeout: 2 * time.Second},
	{name: "two-kill-before-peer", size: 2, serials: []uint64{0x9000, 0x5000}, killMid: 1, timeout: 2 * time.Second},
	{name: "two-kill-mid-election", size: 2, serials: []uint64{0x9000, 0x5000}, killMid: 1, timeout: 20 * time.Second, devices: map[int]int{1: 2}},
}

// The network coordinator gives every node the answers the in-process
// hub gives, in every scenario of the issue.
func TestNetMatchesLocal(t *testing.T) {
	for _, sc := range netScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			want := runScenario(t, sc, false)
			got := runScenario(t, sc, true)
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("node %d: over the network %v, in process %v", i, got[i], want[i])
				}
			}
			t.Logf("%v", want)
		})
	}
}

// A member's daemon goes: the survivor's next election fails over the
// broken links; the member comes back at the same address and the next
// election forms the pod again.
func TestNetMemberComesBack(t *testing.T) {
	nets := netCoordinators(t, 2, nil)
	cfgs := []Config{testConfig(nets[0], 2), testConfig(nets[1], 2)}
	serials := []uint64{0x9000, 0x5000}
	es, rams := startPod(t, cfgs, serials)
	waitAll(t, es)
	checkPod(t, es, rams, serials, 2)

	es[1].Close()
	if _, errno := es[0].Ctrl(CtrlReqPod, 0, 20); errno != 0 {
		t.Fatal(errno)
	}
	start := time.Now()
	waitAll(t, es[:1])
	wantFailure(t, es[0])
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the survivor took %v to notice", d)
	}

	// A new daemon: fresh misc RAM, nothing cached.
	rams[1] = newRAM(testDevices, serials[1])
	back := New(cfgs[1], rams[1])
	t.Cleanup(back.Close)
	for d := 0; d < testDevices; d++ {
		back.OnReset(d, true)
	}
	// Until it serves its links again it is a neighbour that left.
	waitPort(t, back)
	if _, errno := es[0].Ctrl(CtrlReqPod, 0, 20); errno != 0 {
		t.Fatal(errno)
	}
	es[1] = back
	waitAll(t, es)
	checkPod(t, es, rams, serials, 2)
}
