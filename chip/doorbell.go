package chip

import "github.com/neuronfs/neuronfs/internal/lockrank"

// Doorbell is one core's queue of exec doorbells (increments of its
// inference-start semaphore). Whoever rings an idle core becomes its
// runner and does the part of its own doorbell that does not wait in the
// ringing goroutine, holding no lock; the part that waits (staged DMA
// still moving, an execution latency) goes on in a goroutine, so a ringer
// never waits for the program it starts, as on the hardware. Doorbells
// rung meanwhile queue and are served next, by a goroutine, so one caller
// never works for every later one.
type Doorbell struct {
	mu      lockrank.Mutex[lockrank.Exec]
	pending []uint32 // doorbell values not yet served
	running bool     // a runner serves this core
	halted  bool     // a halt was served: doorbells are ignored until Reset
}

// Serve is what a core does for one doorbell value: run (1) or halt (2).
// It does what needs no wait and returns the rest, which waits, or nil
// when the doorbell is done.
type Serve func(v uint32) (rest func())

// Ring queues v and, if the core is idle, serves it: the part that does
// not wait before returning (inline), or all of it in a goroutine (async:
// a caller that must not run the core's program at all).
func (b *Doorbell) Ring(v uint32, serve Serve, async bool) {
	b.mu.Lock()
	b.pending = append(b.pending, v)
	if b.running {
		b.mu.Unlock()
		return
	}
	b.running = true
	b.mu.Unlock()
	if async {
		go b.drain(serve, false)
		return
	}
	b.drain(serve, true)
}

// drain serves queued doorbells as the core's runner. Inline, it serves
// one doorbell's part that does not wait, then hands whatever remains (the
// wait, later doorbells) to a goroutine that stays the runner, so runs
// keep their order.
func (b *Doorbell) drain(serve Serve, inline bool) {
	for served := 0; ; served++ {
		b.mu.Lock()
		if len(b.pending) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		if inline && served == 1 {
			b.mu.Unlock()
			go b.drain(serve, false)
			return
		}
		v := b.pending[0]
		b.pending = b.pending[1:]
		halted := b.halted
		if v == DoorbellHalt {
			b.halted = true
		}
		b.mu.Unlock()
		if halted {
			continue // a halted core ignores doorbells until it is reset
		}
		lockrank.AssertUnlocked("exec doorbell")
		rest := serve(v)
		if rest == nil {
			continue
		}
		if inline {
			go func() {
				rest()
				b.drain(serve, false)
			}()
			return
		}
		rest()
	}
}

// Doorbell values: one run of the staged program, or a halt of the idle
// program after the runtime queued a halt request.
const (
	DoorbellRun  = 1
	DoorbellHalt = 2
)

// Reset forgets queued doorbells and a halt (core reset).
func (b *Doorbell) Reset() {
	b.mu.Lock()
	b.pending, b.halted = nil, false
	b.mu.Unlock()
}
