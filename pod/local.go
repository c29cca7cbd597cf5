package pod

import (
	"context"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// Local is the in-process coordinator: several emulated servers in one
// process (tests) meet in its hubs.
type Local struct {
	mu   lockrank.Mutex[lockrank.PodRegistry]
	hubs map[string]*Hub
}

// NewLocal returns a coordinator with no pods.
func NewLocal() *Local { return &Local{hubs: map[string]*Hub{}} }

// Hub returns the named pod's hub, creating it (for fault hooks).
func (l *Local) Hub(name string) *Hub {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hubs[name]
	if h == nil {
		h = NewHub()
		l.hubs[name] = h
	}
	return h
}

// Join seats the server in its pod's hub.
func (l *Local) Join(ctx context.Context, j Join) (Port, error) {
	if err := j.validate(); err != nil {
		return nil, err
	}
	h := l.Hub(j.Pod)
	slot, gen, err := h.join(j)
	if err != nil {
		return nil, err
	}
	return &localPort{h: h, slot: slot, gen: gen}, nil
}

type localPort struct {
	h    *Hub
	slot int
	gen  uint64
}

func (p *localPort) Slot() int { return p.slot }

func (p *localPort) Publish(ctx context.Context, dev int, off, v uint32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return p.h.publish(p.slot, p.gen, dev, off, v)
}

func (p *localPort) Read(ctx context.Context, side Side, dev int, off uint32, n int) ([]uint32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return p.h.read(p.slot, p.gen, side, dev, off, n)
}

func (p *localPort) Close() error {
	p.h.leave(p.slot, p.gen)
	return nil
}
