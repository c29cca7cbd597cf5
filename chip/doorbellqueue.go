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

// doorbellServer is what a core does for one doorbell value: run (1) or
// halt (2). beginDoorbell does what needs no wait and returns the work left,
// which waits, or nil when the doorbell is done; finishDoorbell does it,
// in the doorbell's goroutine. Unless woken, the core's engines have not
// yet heard of the increment that rang: beginDoorbell tells them at once, or
// runs them itself.
type doorbellServer interface {
	beginDoorbell(v uint32, woken bool) *doorbellWork
	finishDoorbell(w *doorbellWork)
}

// Ring queues v and, if the core is idle, serves it: the part that does
// not wait before returning (inline), or all of it in a goroutine (async:
// a caller that must not run the core's program at all). The caller
// stored the increment and leaves waking the engines to Ring: wake, at
// once, unless Ring serves v inline, where serve.s beginDoorbell does.
func (b *Doorbell) Ring(v uint32, serve doorbellServer, async bool, wake func()) {
	b.mu.Lock()
	b.pending = append(b.pending, v)
	if b.running {
		b.mu.Unlock()
		wake()
		return
	}
	b.running = true
	b.mu.Unlock()
	if async {
		wake()
		go b.drain(serve, false, nil)
		return
	}
	b.drain(serve, true, wake)
}

// drain serves queued doorbells as the core's runner. Inline, it serves
// one doorbell's part that does not wait, then hands whatever remains (the
// wait, later doorbells) to a goroutine that stays the runner, so runs
// keep their order. wake is due for the first doorbell served (nil:
// done).
func (b *Doorbell) drain(serve doorbellServer, inline bool, wake func()) {
	for served := 0; ; served++ {
		b.mu.Lock()
		if len(b.pending) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		if inline && served == 1 {
			b.mu.Unlock()
			go b.drain(serve, false, nil)
			return
		}
		v := b.pending[0]
		b.pending = b.pending[1:]
		halted := b.halted
		if v == DoorbellHalt {
			b.halted = true
		}
		b.mu.Unlock()
		due := wake
		wake = nil
		if halted {
			if due != nil {
				due()
			}
			continue // a halted core ignores doorbells until it is reset
		}
		lockrank.AssertUnlocked("exec doorbell")
		w := serve.beginDoorbell(v, due == nil)
		if w == nil {
			continue
		}
		if inline {
			go b.finishThenDrain(serve, w)
			return
		}
		serve.finishDoorbell(w)
	}
}

// finishThenDrain is the goroutine an inline ringer leaves its wait to:
// it stays the core's runner.
func (b *Doorbell) finishThenDrain(serve doorbellServer, w *doorbellWork) {
	serve.finishDoorbell(w)
	b.drain(serve, false, nil)
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
