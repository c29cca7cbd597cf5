package pod

import (
	"net"
	"sync"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// connServer is what a pod's servers share: a listener, the connections
// it accepted (with what the server knows of each) and their handlers.
// mu also guards the embedding server's own registry.
type connServer[V any] struct {
	l     net.Listener
	mu    lockrank.Mutex[lockrank.PodRegistry]
	conns map[net.Conn]V
	wg    sync.WaitGroup
}

func newConnServer[V any](l net.Listener) connServer[V] {
	return connServer[V]{l: l, conns: map[net.Conn]V{}}
}

// Close stops accepting, drops every connection and waits for the
// handlers.
func (s *connServer[V]) Close() {
	s.l.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
