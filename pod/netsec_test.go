package pod

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// servingPort joins slot 0 of a 2-node pod on loopback and publishes a
// register; it returns the port and the pod's peer list.
func servingPort(t *testing.T) (*netPort, Peers) {
	t.Helper()
	nets := netCoordinators(t, 2, nil)
	p, err := nets[0].Join(context.Background(), Join{Pod: "sec", Size: 2, Slot: 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := p.Publish(context.Background(), 3, RegStatus, 0x1234); err != nil {
		t.Fatal(err)
	}
	return p.(*netPort), nets[0].Peers
}

// recorder keeps what is written to a connection.
type recorder struct {
	net.Conn
	buf bytes.Buffer
}

func (r *recorder) Write(b []byte) (int, error) {
	r.buf.Write(b)
	return r.Conn.Write(b)
}

// rawClient opens a session to the port as slot across side.
func rawClient(t *testing.T, p *netPort, secret []byte, pod string, slot int, side Side) (*session, *recorder) {
	t.Helper()
	c, err := net.Dial("tcp", p.srv.l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	rec := &recorder{Conn: c}
	s, err := handshake(rec, secret, pod, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.write(netMsg{typ: msgHello, size: 2, slot: slot, side: side}); err != nil {
		t.Fatal(err)
	}
	return s, rec
}

func readReg(s *session) (uint32, error) {
	if err := s.write(netMsg{typ: msgRead, dev: 3, off: RegStatus, n: 1}); err != nil {
		return 0, err
	}
	m, err := s.read()
	if err != nil {
		return 0, err
	}
	return m.words[0], nil
}

// A member reads; replays of its frames, in the same connection or in a
// new one, are refused without an answer and the server keeps serving.
func TestNetReplayRefused(t *testing.T) {
	p, _ := servingPort(t)
	s, rec := rawClient(t, p, testSecret, "sec", 1, Left)
	if m, err := s.read(); err != nil || m.typ != msgHelloReply || m.verdict != helloOK || m.slot != 0 {
		t.Fatalf("hello: %+v %v", m, err)
	}
	before := rec.buf.Len()
	if v, err := readReg(s); err != nil || v != 0x1234 {
		t.Fatalf("read %#x %v", v, err)
	}
	frame := append([]byte(nil), rec.buf.Bytes()[before:]...)
	// The same read frame again, in the same connection: out of sequence.
	s.conn.Write(frame)
	if _, err := s.read(); err == nil {
		t.Error("a replayed frame was answered")
	}
	// The whole conversation again on a new connection: the server's
	// nonce differs, so its first frame does not open.
	c, err := net.Dial("tcp", p.srv.l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write(rec.buf.Bytes())
	b, _ := io.ReadAll(c)
	// It gets the server's nonce (and nothing it can use) and then EOF.
	if len(b) > len(netMagic)+nonceLen {
		t.Errorf("a replayed connection got %d bytes", len(b))
	}
	// A member still reads.
	s2, _ := rawClient(t, p, testSecret, "sec", 1, Right)
	s2.read()
	if v, err := readReg(s2); err != nil || v != 0x1234 {
		t.Errorf("after the replays: %#x %v", v, err)
	}
}

// Strangers — garbage, a wrong secret, another pod's name, a node cabled
// elsewhere — get nothing, and the pod's members still read.
func TestNetStrangersRefused(t *testing.T) {
	p, peers := servingPort(t)
	addr := p.srv.l.Addr().String()
	for _, garbage := range []string{"GET / HTTP/1.0\r\n\r\n", strings.Repeat("\xff", 100), netMagic + strings.Repeat("x", nonceLen) + "\x00\x05hello"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte(garbage))
		b, err := io.ReadAll(c)
		c.Close()
		if len(b) > len(netMagic)+nonceLen || (err != nil && !errors.Is(err, syscall.ECONNRESET)) {
			t.Errorf("garbage %q: got %d bytes, %v", garbage, len(b), err)
		}
	}
	ctx := context.Background()
	for _, x := range []struct {
		name   string
		secret []byte
		pod    string
		size   int
		slot   int
	}{
		{"wrong secret", []byte("not-the-pod-secret-at-all"), "sec", 2, 1},
		{"another pod", testSecret, "other", 2, 1},
	} {
		n := &Net{Peers: peers, Secret: x.secret, Timeout: 500 * time.Millisecond, Listen: "127.0.0.1:0"}
		q, err := n.Join(ctx, Join{Pod: x.pod, Size: x.size, Slot: x.slot})
		if err != nil {
			t.Fatal(err)
		}
		side := Left
		if _, err := q.Read(ctx, side, 3, RegStatus, 1); !errors.Is(err, ErrLink) {
			t.Errorf("%s: read %v, want a broken link", x.name, err)
		}
		q.Close()
	}
	// A member of the pod that claims this server's own slot.
	s, _ := rawClient(t, p, testSecret, "sec", 0, Left)
	if m, err := s.read(); err != nil || m.verdict != helloRefused {
		t.Errorf("a miscabled hello: %+v %v", m, err)
	}
	if _, err := readReg(s); err == nil {
		t.Error("a miscabled peer reads")
	}
	s, _ = rawClient(t, p, testSecret, "sec", 1, Left)
	s.read()
	if v, err := readReg(s); err != nil || v != 0x1234 {
		t.Errorf("a member after the strangers: %#x %v", v, err)
	}
}

// A neighbour nobody listens for reads as a chip that is not up; one that
// answered once and went reads as a broken link, until it comes back.
func TestNetNeighbourGoesAndComesBack(t *testing.T) {
	nets := netCoordinators(t, 2, nil)
	ctx := context.Background()
	a, err := nets[0].Join(ctx, Join{Pod: "p", Size: 2, Slot: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if w, err := a.Read(ctx, Right, 0, RegSerialLo, 2); err != nil || w[0] != 0 {
		t.Fatalf("absent neighbour: %v %v", w, err)
	}
	b, err := nets[1].Join(ctx, Join{Pod: "p", Size: 2, Slot: 1})
	if err != nil {
		t.Fatal(err)
	}
	b.Publish(ctx, 0, RegSerialLo, 7)
	if w, err := a.Read(ctx, Right, 0, RegSerialLo, 2); err != nil || w[0] != 7 {
		t.Fatalf("neighbour up: %v %v", w, err)
	}
	b.Close()
	if _, err := a.Read(ctx, Right, 0, RegSerialLo, 2); !errors.Is(err, ErrLink) {
		t.Fatalf("neighbour gone: %v", err)
	}
	if _, err := a.Read(ctx, Right, 0, RegSerialLo, 2); !errors.Is(err, ErrLink) {
		t.Fatalf("neighbour still gone: %v", err)
	}
	b, err = nets[1].Join(ctx, Join{Pod: "p", Size: 2, Slot: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if w, err := a.Read(ctx, Right, 0, RegSerialLo, 2); err != nil || w[0] != 0 {
		t.Fatalf("neighbour back (nothing published yet): %v %v", w, err)
	}
}

func TestParsePeers(t *testing.T) {
	for _, ok := range []string{"a:1,b:2", "10.0.0.1:7470,10.0.0.2:7470,10.0.0.3:7470,10.0.0.4:7470", "[::1]:5,[::2]:5", "dns:neuronfs-pod.kube-system.svc:7470"} {
		if _, err := ParsePeers(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a:1", "a:1,b:2,c:3", "a,b", "a:0,b:1", "a:1,b:99999", "dns:x", "dns::5", "dns:x:port"} {
		if _, err := ParsePeers(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzDecodeNetMsg(f *testing.F) {
	for _, m := range []netMsg{
		{typ: msgHello, size: 4, slot: 3, side: Right}, {typ: msgHelloReply, slot: 1, verdict: helloNotReady},
		{typ: msgRead, dev: 15, off: RegStatus, n: 4}, {typ: msgReadReply, words: []uint32{1, 2, 3}},
	} {
		f.Add(m.encode())
	}
	f.Add([]byte{msgRead, 16, 0xff, 0xfc, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeNetMsg(b)
		if err != nil {
			return
		}
		// What passes re-encodes to itself and is in range.
		if !bytes.Equal(m.encode(), b) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, m, m.encode())
		}
		switch m.typ {
		case msgRead:
			if checkRegs(m.dev, m.off, m.n) != nil {
				t.Fatalf("accepted read %+v", m)
			}
		case msgHello:
			if neighbor(m.size, m.slot, m.side) >= m.size {
				t.Fatalf("accepted hello %+v", m)
			}
		}
	})
}

// Frames are fuzzed too: whatever arrives on a session opens only if it
// was sealed with the session's key in sequence.
func FuzzSessionRead(f *testing.F) {
	f.Add([]byte{0, 20, 1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, c := net.Pipe()
		defer a.Close()
		defer c.Close()
		go func() {
			c.Write(b)
			c.Close()
		}()
		s := &session{conn: a, recv: deriveAEAD(testSecret, "p", "c2s", make([]byte, 32), make([]byte, 32))}
		if m, err := s.read(); err == nil {
			t.Fatalf("a forged frame opened: %+v", m)
		}
	})
}

// A stranger holding connections open without a word cannot keep a
// member from another address out.
func TestNetKnockersDoNotLockOut(t *testing.T) {
	p, _ := servingPort(t)
	addr := p.srv.l.Addr().String()
	var idle []net.Conn
	for i := 0; i < 3*maxPendingPerHost; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	s, err := handshake(c, testSecret, "sec", true)
	if err != nil {
		t.Fatal(err)
	}
	s.write(netMsg{typ: msgHello, size: 2, slot: 1, side: Left})
	if m, err := s.read(); err != nil || m.verdict != helloOK {
		t.Fatalf("hello: %+v %v", m, err)
	}
	if v, err := readReg(s); err != nil || v != 0x1234 {
		t.Errorf("a member among knockers: %#x %v", v, err)
	}
	// The knockers beyond the limit were turned away at once.
	closed := 0
	for _, k := range idle {
		k.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := k.Read(make([]byte, 64)); err == io.EOF || errors.Is(err, syscall.ECONNRESET) {
			closed++
		}
	}
	if closed < 2*maxPendingPerHost {
		t.Errorf("%d of %d knockers turned away", closed, len(idle))
	}
}

// A member that holds the secret and then says nothing loses its link
// after the idle bound; a member that merely pauses between reads does
// not see a broken link, as its side hangs up first and dials again.
func TestNetIdleLinkClosed(t *testing.T) {
	const idle = 200 * time.Millisecond
	nets := netCoordinators(t, 2, nil)
	ctx := context.Background()
	for _, n := range nets {
		n.Idle = idle
	}
	a, err := nets[0].Join(ctx, Join{Pod: "sec", Size: 2, Slot: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.Publish(ctx, 3, RegStatus, 0x1234)
	p := a.(*netPort)

	s, _ := rawClient(t, p, testSecret, "sec", 1, Left)
	if m, err := s.read(); err != nil || m.verdict != helloOK {
		t.Fatalf("hello: %+v %v", m, err)
	}
	if v, err := readReg(s); err != nil || v != 0x1234 {
		t.Fatalf("read %#x %v", v, err)
	}
	// rawClient's own deadline (5 s) is far beyond the idle bound: only
	// the server hanging up ends this read early.
	if _, err := s.conn.Read(make([]byte, 1)); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("a silent member's link: %v, want it closed by the server", err)
	}

	b, err := nets[1].Join(ctx, Join{Pod: "sec", Size: 2, Slot: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := 0; i < 3; i++ {
		if w, err := b.Read(ctx, Right, 3, RegStatus, 1); err != nil || w[0] != 0x1234 {
			t.Fatalf("read %d: %v %v", i, w, err)
		}
		time.Sleep(3 * idle)
	}
}

// Authenticated links from one address are capped; another address
// still gets in.
func TestNetLinksPerHostCapped(t *testing.T) {
	p, _ := servingPort(t)
	for i := 0; i < maxLinksPerHost; i++ {
		s, _ := rawClient(t, p, testSecret, "sec", 1, Left)
		if m, err := s.read(); err != nil || m.verdict != helloOK {
			t.Fatalf("link %d: %+v %v", i, m, err)
		}
	}
	s, _ := rawClient(t, p, testSecret, "sec", 1, Left)
	if m, err := s.read(); err == nil {
		t.Errorf("link %d from one address: answered %+v", maxLinksPerHost+1, m)
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	c, err := d.Dial("tcp", p.srv.l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	s, err = handshake(c, testSecret, "sec", true)
	if err != nil {
		t.Fatal(err)
	}
	s.write(netMsg{typ: msgHello, size: 2, slot: 1, side: Left})
	if m, err := s.read(); err != nil || m.verdict != helloOK {
		t.Fatalf("another address: %+v %v", m, err)
	}
	if v, err := readReg(s); err != nil || v != 0x1234 {
		t.Errorf("another address reads: %#x %v", v, err)
	}
}
