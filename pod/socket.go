package pod

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// Socket is the coordinator for servers emulated by separate daemons on
// one host. The first daemon of a pod to join listens on the pod's Unix
// socket and keeps the pod's hub; the others connect to it. If that daemon
// goes, its members' links fail and the next election they run makes one
// of them the new host.
type Socket struct {
	// Addr maps a pod name to a socket address (default Address).
	Addr func(pod string) string
	Log  *logrus.Entry

	mu      lockrank.Mutex[lockrank.PodRegistry]
	servers map[string]*Server
	closed  bool
}

// Address is the default socket of a pod: in Linux's abstract namespace,
// so no file is left behind by a daemon that dies.
func Address(pod string) string { return "@neuronfs/pod/" + pod }

// NewSocket returns a coordinator with the default addresses.
func NewSocket(log *logrus.Entry) *Socket {
	if log == nil {
		l := logrus.New()
		l.SetLevel(logrus.WarnLevel)
		log = logrus.NewEntry(l)
	}
	return &Socket{Addr: Address, Log: log, servers: map[string]*Server{}}
}

// Join connects to the pod's socket, hosting it first if nobody does.
func (s *Socket) Join(ctx context.Context, j Join) (Port, error) {
	if err := j.validate(); err != nil {
		return nil, err
	}
	addr := s.Addr(j.Pod)
	var d net.Dialer
	for try := 0; ; try++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		conn, err := d.DialContext(ctx, "unix", addr)
		if err == nil {
			return s.handshake(ctx, conn, j)
		}
		if try >= 20 {
			return nil, fmt.Errorf("pod %s: %w", j.Pod, err)
		}
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			if herr := s.host(addr); herr != nil && !errors.Is(herr, syscall.EADDRINUSE) {
				return nil, herr
			}
			continue
		}
		// Something else (a full backlog, say): wait a little.
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// host starts serving the pod at addr in this process.
func (s *Socket) host(addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("pod: coordinator closed")
	}
	if _, ok := s.servers[addr]; ok {
		return nil
	}
	l, err := net.Listen("unix", addr)
	if err != nil {
		return err
	}
	s.Log.WithField("socket", addr).Info("hosting the pod")
	s.servers[addr] = Serve(l, s.Log)
	return nil
}

// Close stops the pods this process hosts.
func (s *Socket) Close() error {
	s.mu.Lock()
	servers := s.servers
	s.servers, s.closed = nil, true
	s.mu.Unlock()
	for _, srv := range servers {
		srv.Close()
	}
	return nil
}

func (s *Socket) handshake(ctx context.Context, conn net.Conn, j Join) (Port, error) {
	p := &socketPort{conn: conn, r: bufio.NewReaderSize(conn, maxLine+1)}
	r, err := p.rpc(ctx, request{Op: "join", Pod: j.Pod, Size: j.Size, Slot: j.Slot, Serial: j.Serial}, 0)
	if err != nil {
		conn.Close()
		return nil, err
	}
	p.slot = r.Slot
	return p, nil
}

type socketPort struct {
	slot int

	mu     lockrank.Mutex[lockrank.PodLink] // one exchange at a time
	conn   net.Conn
	r      *bufio.Reader
	broken error
}

func (p *socketPort) Slot() int { return p.slot }

// Broken reports whether the connection is gone.
func (p *socketPort) Broken() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.broken != nil
}

// rpc sends q and reads its response, within rpcTimeout and ctx. Any
// transport failure breaks the port for good.
func (p *socketPort) rpc(ctx context.Context, q request, words int) (response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broken != nil {
		return response{}, p.broken
	}
	if err := ctx.Err(); err != nil {
		return response{}, err // nothing sent: the connection is still good
	}
	deadline := time.Now().Add(rpcTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	p.conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { p.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	r, err := p.exchange(q, words)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		p.broken = fmt.Errorf("pod: connection lost: %w", err)
		p.conn.Close()
		return r, p.broken
	}
	if r.Link {
		return r, ErrLink
	}
	if r.Err != "" {
		return r, errors.New(r.Err)
	}
	return r, nil
}

func (p *socketPort) exchange(q request, words int) (response, error) {
	b, err := json.Marshal(q)
	if err != nil {
		return response{}, err
	}
	if _, err := p.conn.Write(append(b, '\n')); err != nil {
		return response{}, err
	}
	line, err := p.r.ReadSlice('\n')
	if err != nil {
		return response{}, err
	}
	return decodeResponse(line, words)
}

func (p *socketPort) Publish(ctx context.Context, dev int, off, v uint32) error {
	_, err := p.rpc(ctx, request{Op: "publish", Dev: dev, Off: off, Val: v}, 0)
	return err
}

func (p *socketPort) Read(ctx context.Context, side Side, dev int, off uint32, n int) ([]uint32, error) {
	r, err := p.rpc(ctx, request{Op: "read", Side: int(side), Dev: dev, Off: off, N: n}, n)
	return r.Words, err
}

func (p *socketPort) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broken == nil {
		p.broken = errors.New("pod: port closed")
	}
	return p.conn.Close()
}

// Server serves pods over a listener: one hub per pod name.
type Server struct {
	// connServer holds the members' connections; its Close stops
	// accepting, drops every member and waits for the handlers.
	connServer[bool]
	log  *logrus.Entry
	hubs map[string]*Hub
}

// Serve accepts members on l until Close.
func Serve(l net.Listener, log *logrus.Entry) *Server {
	s := &Server{connServer: newConnServer[bool](l), log: log, hubs: map[string]*Hub{}}
	s.wg.Add(1)
	go s.accept()
	return s
}

// Hub returns the named pod's hub (for fault hooks).
func (s *Server) Hub(pod string) *Hub {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hubs[pod]
	if h == nil {
		h = NewHub()
		s.hubs[pod] = h
	}
	return h
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

// serve answers one member until its connection ends; then it leaves.
func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	r := bufio.NewReaderSize(c, maxLine+1)
	var hub *Hub
	var slot int
	var gen uint64
	defer func() {
		if hub != nil {
			hub.leave(slot, gen)
		}
	}()
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return // gone, or a line too long
		}
		q, err := decodeRequest(line)
		var resp response
		switch {
		case err != nil:
			resp.Err = err.Error()
		case q.Op == "join" && hub == nil:
			hub = s.Hub(q.Pod)
			if slot, gen, err = hub.join(q.join()); err != nil {
				hub = nil
				resp.Err = err.Error()
			}
			resp.Slot = slot
		case hub == nil || q.Op == "join":
			resp.Err = "pod: join first, and once"
		case q.Op == "publish":
			err = hub.publish(slot, gen, q.Dev, q.Off, q.Val)
		case q.Op == "read":
			resp.Words, err = hub.read(slot, gen, Side(q.Side), q.Dev, q.Off, q.N)
		}
		if err != nil && resp.Err == "" {
			resp.Link = errors.Is(err, ErrLink)
			if !resp.Link {
				resp.Err = err.Error()
			}
		}
		if hub != nil {
			resp.Slot = slot
		}
		b, _ := json.Marshal(resp)
		c.SetWriteDeadline(time.Now().Add(rpcTimeout))
		if _, err := c.Write(append(b, '\n')); err != nil {
			return
		}
	}
}
