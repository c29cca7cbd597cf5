package pod

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// linkServer answers a server's neighbours: after the handshake and a
// hello that shows the caller is cabled to this server, it answers
// register reads of the published misc RAM, and nothing else.
type linkServer struct {
	p *netPort
	// connServer's conns map each link to its side, -1 before the hello.
	connServer[Side]

	pending map[string]int // connections before the hello, by remote host
	links   map[string]int // connections past the hello, by remote host
	cut     [2]bool
}

func serveLinks(p *netPort, l net.Listener) *linkServer {
	s := &linkServer{p: p, connServer: newConnServer[Side](l), pending: map[string]int{}, links: map[string]int{}}
	s.wg.Add(1)
	go s.accept()
	return s
}

func (s *linkServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors, say: do not spin.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		host := remoteHost(c)
		s.mu.Lock()
		total := 0
		for _, n := range s.pending {
			total += n
		}
		full := s.pending[host] >= maxPendingPerHost || total >= maxPending
		if !full {
			s.conns[c] = -1
			s.pending[host]++
		}
		s.mu.Unlock()
		if full {
			s.p.warn(fmt.Errorf("from %s", c.RemoteAddr()), "too many link connections waiting for a hello: refused")
			c.Close()
			continue
		}
		s.wg.Add(1)
		go s.serve(c)
	}
}

// dropSide pulls this end of a cable: the links over side close and new
// hellos over it are refused.
func (s *linkServer) dropSide(side Side, cut bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cut[side] = cut
	if !cut {
		return
	}
	for c, sd := range s.conns {
		if sd == side {
			c.Close()
		}
	}
}

func (s *linkServer) serve(c net.Conn) {
	defer s.wg.Done()
	host, hello, linked := remoteHost(c), false, false
	defer func() { s.drop(c, host, hello, linked) }()
	sess, m, ok := s.greet(c)
	if !ok {
		return
	}
	slot, verdict := s.judge(c, m)
	cut, full, linked := s.admit(c, host, m.side, verdict)
	hello = true
	if cut {
		return // a pulled cable answers nothing
	}
	if full {
		s.p.warn(fmt.Errorf("from %s", c.RemoteAddr()), "too many pod links from one address: refused")
		return
	}
	if slot < 0 {
		slot = 0 // the reply needs a slot; the verdict says it means nothing
	}
	if err := sess.write(netMsg{typ: msgHelloReply, slot: slot, verdict: verdict}); err != nil || verdict != helloOK {
		return
	}
	c.SetDeadline(time.Time{})
	s.answerReads(c, sess)
}

// drop forgets a connection that ended: its pending hello, or its place
// among its host's links.
func (s *linkServer) drop(c net.Conn, host string, hello, linked bool) {
	s.mu.Lock()
	delete(s.conns, c)
	if !hello {
		s.donePendingLocked(host)
	}
	if linked {
		if s.links[host]--; s.links[host] <= 0 {
			delete(s.links, host)
		}
	}
	s.mu.Unlock()
	c.Close()
}

// greet runs the handshake and reads the caller's hello; a stranger gets
// one timeout to prove itself, then the door (ok false).
func (s *linkServer) greet(c net.Conn) (*session, netMsg, bool) {
	c.SetDeadline(time.Now().Add(s.p.timeout))
	sess, err := handshake(c, s.p.n.Secret, s.p.pod, false)
	if err != nil {
		s.refuse(c, err)
		return nil, netMsg{}, false
	}
	m, err := sess.read()
	if err == nil && m.typ != msgHello {
		err = fmt.Errorf("%w: type %d before the hello", errBadMsg, m.typ)
	}
	if err != nil {
		s.refuse(c, err)
		return nil, netMsg{}, false
	}
	return sess, m, true
}

// judge answers a hello: this server's slot, and whether the caller is
// cabled to it.
func (s *linkServer) judge(c net.Conn, m netMsg) (slot int, verdict byte) {
	p := s.p
	p.mu.Lock()
	slot = p.slot
	p.mu.Unlock()
	switch {
	case slot < 0:
		return slot, helloNotReady
	case m.size != p.size || m.slot == slot || neighbor(p.size, m.slot, m.side) != slot:
		p.warn(fmt.Errorf("%s says it is slot %d of %d across its %s link; this is slot %d of %d", c.RemoteAddr(), m.slot, m.size, m.side, slot, p.size),
			"link refused: the caller is not cabled to this server")
		return slot, helloRefused
	}
	return slot, helloOK
}

// admit records the hello: whether the link on side is cut, whether the
// caller's host holds too many links already, and whether this one now
// counts among them.
func (s *linkServer) admit(c net.Conn, host string, side Side, verdict byte) (cut, full, linked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cut = s.cut[side]
	if _, ok := s.conns[c]; ok {
		s.conns[c] = side
	}
	s.donePendingLocked(host)
	full = verdict == helloOK && s.links[host] >= maxLinksPerHost
	if verdict == helloOK && !full {
		s.links[host]++
		linked = true
	}
	return cut, full, linked
}

// answerReads serves the caller's register reads until it goes. A link
// that carries no read for p.idle is closed: even a member holding the
// secret cannot keep connections forever.
func (s *linkServer) answerReads(c net.Conn, sess *session) {
	p := s.p
	for {
		c.SetReadDeadline(time.Now().Add(p.idle))
		m, err := sess.read()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.refuse(c, err)
			}
			return
		}
		if m.typ != msgRead {
			s.refuse(c, fmt.Errorf("%w: type %d", errBadMsg, m.typ))
			return
		}
		c.SetWriteDeadline(time.Now().Add(p.timeout))
		if err := sess.write(netMsg{typ: msgReadReply, words: p.published(m.dev, m.off, m.n)}); err != nil {
			return
		}
	}
}

func remoteHost(c net.Conn) string {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

func (s *linkServer) donePendingLocked(host string) {
	if s.pending[host]--; s.pending[host] <= 0 {
		delete(s.pending, host)
	}
}

// refuse logs why a connection is dropped when it is the caller's fault
// (bad secret, garbage, a replay); plain hang-ups are not news.
func (s *linkServer) refuse(c net.Conn, err error) {
	if errors.Is(err, errAuth) || errors.Is(err, errBadMsg) {
		s.p.warn(fmt.Errorf("from %s: %w", c.RemoteAddr(), err), "link message refused")
		return
	}
	s.p.log.WithError(err).WithField("from", c.RemoteAddr().String()).Debug("link closed")
}
