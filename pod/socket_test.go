package pod

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// uniquePod names a pod no other test process uses: abstract sockets are
// shared by the whole host.
func uniquePod(t *testing.T) string {
	return fmt.Sprintf("test-%d-%s", os.Getpid(), t.Name())
}

func TestSocketElection(t *testing.T) {
	name := uniquePod(t)
	// Two coordinators stand for two daemons.
	a, b := NewSocket(nil), NewSocket(nil)
	t.Cleanup(func() { a.Close(); b.Close() })
	cfgs := []Config{testConfig(a, 2), testConfig(b, 2)}
	for i := range cfgs {
		cfgs[i].Pod = name
	}
	serials := []uint64{0x2222, 0x1111}
	es, rams := startPod(t, cfgs, serials)
	waitAll(t, es)
	checkPod(t, es, rams, serials, 2)

	// The hosting daemon goes away: the survivor hosts a new hub, where
	// its peer never shows up, and its next election ends at the deadline.
	a.mu.Lock()
	hostedByA := len(a.servers) == 1
	a.mu.Unlock()
	host, survivor, dead := a, es[1], es[0]
	if !hostedByA {
		host, survivor, dead = b, es[0], es[1]
	}
	dead.Close()
	host.Close()
	start := time.Now()
	if _, errno := survivor.Ctrl(CtrlReqPod, 0, 1); errno != 0 {
		t.Fatal(errno)
	}
	waitAll(t, []*Election{survivor})
	if survivor.State() != StateFailure {
		t.Errorf("election without the peer: %v", survivor.State())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestSocketDeadPeer(t *testing.T) {
	name := uniquePod(t)
	a, b := NewSocket(nil), NewSocket(nil)
	t.Cleanup(func() { a.Close(); b.Close() })
	p, err := b.Join(context.Background(), Join{Pod: name, Size: 2, Slot: 1})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	cfg := testConfig(a, 2)
	cfg.Pod = name
	start := time.Now()
	es, _ := startPod(t, []Config{cfg}, []uint64{0x10})
	waitAll(t, es)
	wantFailure(t, es[0])
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a dead peer took %v", d)
	}
}

func TestSocketJoinRules(t *testing.T) {
	name := uniquePod(t)
	a := NewSocket(nil)
	t.Cleanup(func() { a.Close() })
	ctx := context.Background()
	p0, err := a.Join(ctx, Join{Pod: name, Size: 2, Slot: -1})
	if err != nil || p0.Slot() != 0 {
		t.Fatal(p0, err)
	}
	defer p0.Close()
	if _, err := a.Join(ctx, Join{Pod: name, Size: 4, Slot: -1}); err == nil {
		t.Error("a 4-node member joined a 2-node pod")
	}
	if _, err := a.Join(ctx, Join{Pod: name, Size: 2, Slot: 0}); err == nil {
		t.Error("two members in one slot")
	}
	p1, err := a.Join(ctx, Join{Pod: name, Size: 2, Slot: -1})
	if err != nil || p1.Slot() != 1 {
		t.Fatal(err)
	}
	if err := p0.Publish(ctx, 3, RegStatus, 0xabc); err != nil {
		t.Fatal(err)
	}
	if w, err := p1.Read(ctx, Left, 3, RegStatus, 1); err != nil || w[0] != 0xabc {
		t.Errorf("read %v %v", w, err)
	}
	if _, err := p1.Read(ctx, Left, 3, 0xffc, 2); err == nil {
		t.Error("a read past misc RAM")
	}
	if _, err := a.Join(ctx, Join{Pod: name, Size: 2, Slot: -1}); err == nil {
		t.Error("a third member in a 2-node pod")
	}
	p1.Close()
	// The hub notices the closed connection on its own time.
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		_, err := p0.Read(ctx, Right, 3, RegStatus, 1)
		if err == ErrLink {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("read of a departed member: %v", err)
		}
	}
}

// TestServerSurvivesGarbage: nonsense on the socket costs the sender its
// connection, nothing else.
func TestServerSurvivesGarbage(t *testing.T) {
	name := uniquePod(t)
	a := NewSocket(nil)
	t.Cleanup(func() { a.Close() })
	ctx := context.Background()
	p0, err := a.Join(ctx, Join{Pod: name, Size: 2, Slot: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer p0.Close()
	for _, junk := range []string{"{", `{"op":"read","n":1}`, `{"op":"join","pod":"","size":3}`, "\x00\xff", strings.Repeat("x", 3*maxLine)} {
		c, err := net.Dial("unix", Address(name))
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "%s\n", junk)
		line, _ := bufio.NewReader(c).ReadString('\n')
		if len(junk) < maxLine && !strings.Contains(line, `"err"`) {
			t.Errorf("%q: answer %q", junk, line)
		}
		c.Close()
	}
	if err := p0.Publish(ctx, 0, RegStatus, 1); err != nil {
		t.Errorf("the hub broke: %v", err)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{`{"op":"join","pod":"a","size":2,"slot":-1}`, `{"op":"read","side":1,"dev":3,"off":400,"n":4}`,
		`{"op":"publish","dev":15,"off":4092,"val":7}`, `{"op":"read","n":9}`, `[]`, `{"op":"join","slot":99}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := decodeRequest(b)
		if err != nil {
			return
		}
		// Whatever passes must be safe to hand to a hub.
		h := NewHub()
		switch q.Op {
		case "join":
			h.join(q.join())
		case "publish":
			h.publish(0, 0, q.Dev, q.Off, q.Val)
		case "read":
			h.size = 4
			h.slots[0] = hubSlot{state: slotJoined, gen: 1}
			if w, err := h.read(0, 1, Side(q.Side), q.Dev, q.Off, q.N); err == nil && len(w) != q.N {
				t.Fatalf("%d words for %d", len(w), q.N)
			}
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"slot":1,"words":[1,2]}`), 2)
	f.Add([]byte(`{"link":true}`), 1)
	f.Add([]byte(`{"slot":9}`), 0)
	f.Fuzz(func(t *testing.T, b []byte, want int) {
		r, err := decodeResponse(b, want)
		if err == nil && !r.Link && r.Err == "" && (len(r.Words) != want || r.Slot < 0 || r.Slot >= MaxNodes) {
			t.Fatalf("accepted %+v for %d words", r, want)
		}
	})
}

// A killed election leaves the server able to elect again over the same
// socket coordinator.
func TestSocketKillThenElect(t *testing.T) {
	name := uniquePod(t)
	a, b := NewSocket(nil), NewSocket(nil)
	t.Cleanup(func() { a.Close(); b.Close() })
	cfg := testConfig(a, 2)
	cfg.Pod, cfg.Timeout, cfg.Slot = name, time.Hour, 0
	ea := New(cfg, newRAM(testDevices, 0x300))
	t.Cleanup(ea.Close)
	for d := 0; d < testDevices; d++ {
		ea.OnReset(d, true)
	}
	time.Sleep(50 * time.Millisecond) // let it wait on the absent peer
	ea.Ctrl(CtrlReqKill, 0, 0)
	waitAll(t, []*Election{ea})
	if ea.State() != StateFailure {
		t.Fatalf("after kill: %v", ea.State())
	}
	// eb skips the election at start: it must not see ea's slot while a
	// kill that interrupted an exchange may have cost ea its connection.
	cfg.Coordinator, cfg.Slot, cfg.Ctl = b, 1, CtlSkipElectionAtReset
	eb := New(cfg, newRAM(testDevices, 0x200))
	t.Cleanup(eb.Close)
	for d := 0; d < testDevices; d++ {
		eb.OnReset(d, true)
	}
	if eb.State() != StateFailure {
		t.Fatalf("eb elected at reset: %v", eb.State())
	}
	for _, e := range []*Election{ea, eb} {
		if _, errno := e.Ctrl(CtrlReqPod, 0, 30); errno != 0 {
			t.Fatal(errno)
		}
	}
	waitAll(t, []*Election{ea, eb})
	if ea.State() != StateSuccess || eb.State() != StateSuccess || ea.Result().NodeID != 1 || eb.Result().NodeID != 0 {
		t.Errorf("re-election: %v %+v / %v %+v", ea.State(), ea.Result(), eb.State(), eb.Result())
	}
}
