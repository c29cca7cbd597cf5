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
	defer func() {
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
	}()
	p := s.p
	// A stranger gets one timeout to prove itself, then the door.
	c.SetDeadline(time.Now().Add(p.timeout))
	sess, err := handshake(c, p.n.Secret, p.pod, false)
	if err != nil {
		s.refuse(c, err)
		return
	}
	m, err := sess.read()
	if err == nil && m.typ != msgHello {
		err = fmt.Errorf("%w: type %d before the hello", errBadMsg, m.typ)
	}
	if err != nil {
		s.refuse(c, err)
		return
	}
	p.mu.Lock()
	slot := p.slot
	p.mu.Unlock()
	verdict := helloOK
	switch {
	case slot < 0:
		verdict = helloNotReady
	case m.size != p.size || m.slot == slot || neighbor(p.size, m.slot, m.side) != slot:
		verdict = helloRefused
		p.warn(fmt.Errorf("%s says it is slot %d of %d across its %s link; this is slot %d of %d", c.RemoteAddr(), m.slot, m.size, m.side, slot, p.size),
			"link refused: the caller is not cabled to this server")
	}
	s.mu.Lock()
	cut := s.cut[m.side]
	if _, ok := s.conns[c]; ok {
		s.conns[c] = m.side
	}
	s.donePendingLocked(host)
	hello = true
	full := verdict == helloOK && s.links[host] >= maxLinksPerHost
	if verdict == helloOK && !full {
		s.links[host]++
		linked = true
	}
	s.mu.Unlock()
	if cut {
		return // a pulled cable answers nothing
	}
	if full {
		p.warn(fmt.Errorf("from %s", c.RemoteAddr()), "too many pod links from one address: refused")
		return
	}
	if slot < 0 {
		slot = 0 // the reply needs a slot; the verdict says it means nothing
	}
	if err := sess.write(netMsg{typ: msgHelloReply, slot: slot, verdict: verdict}); err != nil || verdict != helloOK {
		return
	}
	c.SetDeadline(time.Time{})
	for {
		// A link that carries no read for p.idle is closed: even a member
		// holding the secret cannot keep connections forever.
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
