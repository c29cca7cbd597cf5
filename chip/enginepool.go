package chip

import (
	"runtime"
	"time"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// The chip's engine goroutines. An engine no doorbell runs (it outlived
// the doorbell's inline slice, or a store released it from a wait) takes
// turns on at most GOMAXPROCS goroutines of its chip: each turn runs one
// engine for poolSlice (or its yield interval of control records), then
// puts it back at the end of the line and yields the processor. The
// number of goroutines running compute stays that of the processors, so
// a goroutine serving an ioctl waits for at most about one slice to be
// scheduled, however many engines compute; one goroutine per engine (40
// on a trn2 device) made it wait for each of theirs in turn. Goroutines
// start when engines queue and end when none is left: an idle chip keeps
// none.

// poolSlice is one turn of an engine: long enough that a turn's
// bookkeeping (a lock, a clock read) is noise next to compute, short
// enough that an ioctl goroutine waiting for a processor waits about this
// long. A compute record is never cut, so a turn lasts at least one.
const poolSlice = time.Millisecond

// enginePool is a chip's line of engines waiting for a turn.
type enginePool struct {
	mu      lockrank.Mutex[lockrank.EnginePool] // guards line, workers
	line    []poolTurn
	workers int // goroutines taking turns
	size    int // at most this many
}

// poolTurn is an engine of core c waiting for its turn.
type poolTurn struct {
	c *Core
	e *engineRun
}

func newEnginePool() *enginePool {
	return &enginePool{size: max(runtime.GOMAXPROCS(0), 1)}
}

// run queues e for turns, starting a goroutine if fewer than size run.
// The caller holds no lock.
func (p *enginePool) run(c *Core, e *engineRun) {
	p.mu.Lock()
	p.line = append(p.line, poolTurn{c, e})
	more := p.workers < p.size
	if more {
		p.workers++
	}
	p.mu.Unlock()
	if more {
		go p.work()
	}
}

// work gives turns until the line is empty.
func (p *enginePool) work() {
	for {
		p.mu.Lock()
		if len(p.line) == 0 {
			p.workers--
			p.mu.Unlock()
			return
		}
		t := p.take()
		p.mu.Unlock()
		if !t.c.turn(t.e, time.Now().Add(poolSlice)) {
			continue // parked or ended
		}
		p.mu.Lock()
		p.line = append(p.line, t)
		p.mu.Unlock()
		runtime.Gosched() // an ioctl's goroutine may be waiting for the processor
	}
}

// take removes the next turn from the line: an engine whose run was
// stopped first, since its turn only ends it and whoever stopped it (a
// reset, the last process leaving the device) waits for that; otherwise
// the longest waiting. Under mu; the line is a few engines a core.
func (p *enginePool) take() poolTurn {
	i := 0
	for j, t := range p.line {
		if t.e.r.ctx.Err() != nil {
			i = j
			break
		}
	}
	t := p.line[i]
	copy(p.line[i:], p.line[i+1:])
	p.line[len(p.line)-1] = poolTurn{}
	p.line = p.line[:len(p.line)-1]
	return t
}
