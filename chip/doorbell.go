package chip

import "github.com/neuronfs/neuronfs/internal/lockrank"

// Doorbell is one core's queue of exec doorbells (increments of its
// inference-start semaphore). Whoever rings an idle core becomes its
// runner and serves its own doorbell in the ringing goroutine, holding no
// lock, so the chip's waits for staged DMA hold nothing; doorbells rung
// meanwhile queue and are served next, by a goroutine, so one caller never
// works for every later one.
type Doorbell struct {
	mu      lockrank.Mutex[lockrank.Exec]
	pending []uint32 // doorbell values not yet served
	running bool     // a runner serves this core
	halted  bool     // a halt was served: doorbells are ignored until Reset
}

// Serve is what a core does for one doorbell value: run (1) or halt (2).
type Serve func(v uint32)

// Ring queues v and, if the core is idle, serves it before returning
// (inline) or in a goroutine (async, for runs that take time).
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
		go b.drain(serve, 0)
		return
	}
	b.drain(serve, 1)
}

// drain serves queued doorbells as the core's runner: at most max of them
// (0: all) before handing the rest to a goroutine.
func (b *Doorbell) drain(serve Serve, max int) {
	for served := 0; ; served++ {
		b.mu.Lock()
		if len(b.pending) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		if max > 0 && served == max {
			b.mu.Unlock()
			go b.drain(serve, 0)
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
		serve(v)
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
