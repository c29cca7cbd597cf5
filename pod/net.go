package pod

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// Net is the coordinator for servers emulated on different machines (or
// network namespaces). There is no meeting point, hence no host to lose:
// each daemon serves reads of its own published registers to its two
// neighbours and reads theirs over one connection per link, as real
// servers read each other's misc RAM over their cables. A neighbour's
// daemon that goes away breaks exactly the links it had, and a partition
// is a set of broken links.
//
// Link reads map network outcomes onto what a chip reads:
//   - connection refused by a neighbour never reached, or a neighbour that
//     does not know its own slot yet: a chip that is not up (zeros);
//   - any other failure (timeout, unreachable, refused after having been
//     reached, a peer that fails authentication or is cabled elsewhere):
//     a broken link (ErrLink).
type Net struct {
	Peers Peers
	// Listen is the address to serve on; by default this server's own
	// entry of Peers (":PORT" with a DNS name).
	Listen string
	// Secret is the pod secret every member shares (MinSecret bytes or
	// more): it authenticates and encrypts every message.
	Secret []byte
	// Timeout bounds one exchange over a link, connecting included.
	Timeout time.Duration
	// Idle closes a link no read crossed for that long (DefaultLinkIdle
	// if zero); see linkServer.serve.
	Idle time.Duration
	Log  *logrus.Entry

	lookup lookupFunc // tests: a fake DNS
}

// DefaultLinkTimeout bounds a link exchange unless Net.Timeout says.
const DefaultLinkTimeout = 2 * time.Second

// Bounds on connections that have not said a valid hello yet (each lives
// one link timeout at most): per remote address, so that one stranger
// knocking cannot keep the neighbours out, and in all.
const (
	maxPendingPerHost = 4
	maxPending        = 64
)

// DefaultLinkIdle is how long a server keeps an authenticated link that
// carries no read. A member reads its neighbours every poll interval
// while it elects and not at all in between, so links come and go with
// elections; the bound keeps a member that holds the secret but misbehaves
// (or one that vanished without a FIN) from holding connections forever.
const DefaultLinkIdle = time.Minute

// maxLinksPerHost bounds the authenticated links from one remote address.
// A member has at most two links to a server (both links of a 2-node pod
// go to the other server); more come only from several members behind one
// address (a test on loopback) or from a member that misbehaves.
const maxLinksPerHost = 8

// Join starts serving this server's links and returns its port. With a
// fixed peer list the slot is j.Slot or the entry that is this machine;
// with DNS it is found once the name lists the whole pod, and until then
// the neighbours read as chips that are not up.
func (n *Net) Join(ctx context.Context, j Join) (Port, error) {
	if err := j.validate(); err != nil {
		return nil, err
	}
	if len(n.Secret) < MinSecret {
		return nil, fmt.Errorf("pod: the pod secret must have at least %d bytes", MinSecret)
	}
	if n.Peers.Fixed() && n.Peers.Len() != j.Size {
		return nil, fmt.Errorf("pod: %d peers listed for a pod of %d", n.Peers.Len(), j.Size)
	}
	p := &netPort{n: n, pod: j.Pod, size: j.Size, slot: -1, regs: map[reg]uint32{}, timeout: n.Timeout,
		idle: n.Idle, lookup: n.lookup, log: n.Log}
	if p.timeout <= 0 {
		p.timeout = DefaultLinkTimeout
	}
	if p.idle <= 0 {
		p.idle = DefaultLinkIdle
	}
	if p.lookup == nil {
		p.lookup = net.DefaultResolver.LookupHost
	}
	if p.log == nil {
		l := logrus.New()
		l.SetLevel(logrus.WarnLevel)
		p.log = logrus.NewEntry(l)
	}
	p.log = p.log.WithField("pod", j.Pod)
	for s := range p.links {
		p.links[s] = &netLink{side: Side(s)}
	}
	listen := n.Listen
	if n.Peers.Fixed() {
		addrs, _ := n.Peers.resolve(ctx, p.lookup)
		slot := j.Slot
		if slot < 0 {
			var err error
			if slot, err = findSelf(ctx, p.lookup, addrs); err != nil {
				return nil, err
			}
		}
		p.addrs, p.slot = addrs, slot
		if listen == "" {
			listen = addrs[slot]
		}
	} else {
		p.wantSlot = j.Slot
		if listen == "" {
			listen = ":" + n.Peers.Port()
		}
		rctx, cancel := context.WithTimeout(ctx, p.timeout)
		p.members(rctx)
		cancel()
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", j.Pod, err)
	}
	p.srv = serveLinks(p, l)
	p.log.WithFields(logrus.Fields{"listen": l.Addr().String(), "peers": n.Peers.String()}).Info("serving pod links")
	return p, nil
}

// netPort is one server's end of its network links.
type netPort struct {
	n        *Net
	pod      string
	size     int
	timeout  time.Duration
	idle     time.Duration
	lookup   lookupFunc
	log      *logrus.Entry
	srv      *linkServer
	links    [2]*netLink
	lastWarn atomic.Int64 // unix nanoseconds of the last refusal logged

	mu          lockrank.Mutex[lockrank.PodRegistry]
	addrs       []string // the members in slot order, once known
	slot        int      // -1 until known
	wantSlot    int      // DNS: the slot asked for, or -1
	lastResolve time.Time
	closed      bool

	regMu lockrank.Mutex[lockrank.PodHub]
	regs  map[reg]uint32
}

// netLink is one cable: a connection to the neighbour across side.
type netLink struct {
	side Side

	mu   lockrank.Mutex[lockrank.PodLink] // held for one bounded exchange
	s    *session
	used time.Time // s's last answer
	seen bool      // the neighbour answered once: refusal now means it left
	cut  bool      // tests: the cable is pulled
}

// errNotUp: the neighbour is not there yet (its chip reads as zeros).
var errNotUp = errors.New("pod: neighbour not up")

func (p *netPort) Slot() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.slot
}

// members returns the slot-ordered members and this server's slot, once
// known; with DNS it looks again at most once a second.
func (p *netPort) members(ctx context.Context) ([]string, int, bool) {
	p.mu.Lock()
	if p.slot >= 0 || p.closed || time.Since(p.lastResolve) < time.Second {
		defer p.mu.Unlock()
		return p.addrs, p.slot, p.slot >= 0
	}
	p.lastResolve = time.Now()
	want := p.wantSlot
	p.mu.Unlock()

	addrs, err := p.n.Peers.resolve(ctx, p.lookup)
	if err == nil && len(addrs) > p.size {
		p.warn(fmt.Errorf("%s lists %d members", p.n.Peers, len(addrs)), "more members than the pod has nodes: label fewer nodes")
	}
	if err != nil || len(addrs) != p.size {
		p.log.WithError(err).WithField("members", len(addrs)).Debug("pod not complete in DNS yet")
		return nil, -1, false
	}
	slot := want
	if slot < 0 {
		if slot, err = findSelf(ctx, p.lookup, addrs); err != nil {
			p.warn(err, "cannot find this server among the pod's members")
			return nil, -1, false
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.slot < 0 {
		p.addrs, p.slot = addrs, slot
		p.log.WithFields(logrus.Fields{"slot": slot, "members": addrs}).Info("pod members resolved")
	}
	return p.addrs, p.slot, true
}

func (p *netPort) Publish(ctx context.Context, dev int, off, v uint32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkRegs(dev, off, 1); err != nil {
		return err
	}
	p.regMu.Lock()
	defer p.regMu.Unlock()
	p.regs[reg{dev, off}] = v
	return nil
}

// published returns n registers as a neighbour reads them.
func (p *netPort) published(dev int, off uint32, n int) []uint32 {
	p.regMu.Lock()
	defer p.regMu.Unlock()
	out := make([]uint32, n)
	for i := range out {
		out[i] = p.regs[reg{dev, off + 4*uint32(i)}]
	}
	return out
}

func (p *netPort) Read(ctx context.Context, side Side, dev int, off uint32, n int) ([]uint32, error) {
	if err := checkRegs(dev, off, n); err != nil {
		return nil, err
	}
	if side != Left && side != Right {
		return nil, fmt.Errorf("pod: bad side %d", side)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	lk := p.links[side]
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.cut {
		return nil, ErrLink
	}
	addrs, slot, ok := p.members(ctx)
	if p.isClosed() {
		return nil, ErrLink // as the hub answers a member that left
	}
	if !ok {
		return make([]uint32, n), nil
	}
	// Drop a session idle for half the server's bound before the server
	// does: the neighbour hanging up an idle link is no broken cable.
	if lk.s != nil && time.Since(lk.used) > p.idle/2 {
		lk.s.conn.Close()
		lk.s = nil
	}
	if lk.s == nil {
		s, err := p.connect(ctx, addrs[neighbor(p.size, slot, side)], slot, side)
		if errors.Is(err, errNotUp) && !lk.seen {
			return make([]uint32, n), nil
		}
		if err != nil {
			if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
				return nil, ctx.Err()
			}
			return nil, ErrLink
		}
		lk.s, lk.seen = s, true
	}
	words, err := p.exchange(ctx, lk.s, dev, off, n)
	if err != nil {
		lk.s.conn.Close()
		lk.s = nil
		if errors.Is(err, errAuth) || errors.Is(err, errBadMsg) {
			p.warn(err, "link answer refused")
		}
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
			return nil, ctx.Err()
		}
		return nil, ErrLink
	}
	lk.used = time.Now()
	return words, nil
}

// exchange reads registers over an open session, within ctx.
func (p *netPort) exchange(ctx context.Context, s *session, dev int, off uint32, n int) ([]uint32, error) {
	stop := deadlineFromCtx(ctx, s.conn)
	defer stop()
	if err := s.write(netMsg{typ: msgRead, dev: dev, off: off, n: n}); err != nil {
		return nil, err
	}
	m, err := s.read()
	if err != nil {
		return nil, err
	}
	if m.typ != msgReadReply || len(m.words) != n {
		return nil, fmt.Errorf("%w: answer type %d with %d words for %d", errBadMsg, m.typ, len(m.words), n)
	}
	return m.words, nil
}

// deadlineFromCtx makes conn's I/O end with ctx; stop undoes the hook.
func deadlineFromCtx(ctx context.Context, conn net.Conn) (stop func() bool) {
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	return context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
}

// connect dials the neighbour at addr and says hello: errNotUp if nobody
// listens there or the neighbour does not know its slot yet.
func (p *netPort) connect(ctx context.Context, addr string, slot int, side Side) (*session, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, errNotUp
		}
		p.log.WithError(err).WithField("side", side).Debug("link down")
		return nil, err
	}
	stop := deadlineFromCtx(ctx, conn)
	defer stop()
	s, err := handshake(conn, p.n.Secret, p.pod, true)
	if err == nil {
		err = s.write(netMsg{typ: msgHello, size: p.size, slot: slot, side: side})
	}
	var m netMsg
	if err == nil {
		m, err = s.read()
	}
	if err == nil && m.typ != msgHelloReply {
		err = fmt.Errorf("%w: hello answered with type %d", errBadMsg, m.typ)
	}
	if err != nil {
		conn.Close()
		if errors.Is(err, errAuth) || errors.Is(err, errBadMsg) {
			p.warn(fmt.Errorf("%s: %w", addr, err), "neighbour refused: not a member of this pod")
		} else {
			// A neighbour that hangs up on our hello logs why (a wrong
			// secret, say); here it is just a link that is down.
			p.log.WithError(err).WithField("neighbour", addr).Debug("link handshake failed")
		}
		return nil, err
	}
	switch m.verdict {
	case helloNotReady:
		conn.Close()
		return nil, errNotUp
	case helloRefused:
		conn.Close()
		p.warn(fmt.Errorf("%s is slot %d", addr, m.slot), "neighbour refused the link: cabled elsewhere")
		return nil, ErrLink
	}
	if m.slot != neighbor(p.size, slot, side) {
		conn.Close()
		p.warn(fmt.Errorf("%s is slot %d", addr, m.slot), "wrong neighbour")
		return nil, ErrLink
	}
	conn.SetDeadline(time.Time{})
	return s, nil
}

// warn logs a refusal at most once a second: a stranger knocking must
// not flood the log.
func (p *netPort) warn(err error, msg string) {
	now := time.Now().UnixNano()
	last := p.lastWarn.Load()
	if now-last < int64(time.Second) || !p.lastWarn.CompareAndSwap(last, now) {
		p.log.WithError(err).Debug(msg)
		return
	}
	p.log.WithError(err).Warn(msg)
}

// cutLink pulls (or, with cut false, plugs back) this end of the cable
// across side; a test stands in for a real cable cut by pulling both ends.
func (p *netPort) cutLink(side Side, cut bool) {
	lk := p.links[side]
	lk.mu.Lock()
	defer lk.mu.Unlock()
	lk.cut = cut
	if cut && lk.s != nil {
		lk.s.conn.Close()
		lk.s = nil
	}
	p.srv.dropSide(side, cut)
}

func (p *netPort) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *netPort) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.srv.Close()
	for _, lk := range p.links {
		lk.mu.Lock()
		if lk.s != nil {
			lk.s.conn.Close()
			lk.s = nil
		}
		lk.mu.Unlock()
	}
	return nil
}
