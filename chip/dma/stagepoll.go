package dma

import (
	"context"
	"time"

	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
)

// Staging nobody announces. A host copy (MEM_COPY, MEM_BUF_COPY, a DMA
// the host rings), a BAR_WRITE and a host semaphore write call Restage;
// a store through a mapping of device memory reaches the memory with no
// request at all. So while a device-fed queue waits for a descriptor to
// be staged, the engine looks again every StagePoll, for at most
// StageBudget after the wait began (the driver's budget for a request):
// descriptors stored through a mapping start the queue within a poll.
// Past the budget the queue waits for the next Restage or tail
// increment, and costs nothing.
const (
	StagePoll   = time.Millisecond
	StageBudget = time.Second
)

// pollStagedLocked starts the engine's poller unless one runs; called as
// a queue starts waiting for staging.
func (e *Engine) pollStagedLocked() {
	if e.polling != nil {
		return
	}
	done := make(chan struct{})
	e.polling = done
	go e.pollStaged(done)
}

// pollStaged looks for staged descriptors until no queue waits for them,
// the budget is spent, or the engine leaves the normal state (stopped,
// reset): then a queue waits for Restage. It closes done as it returns.
func (e *Engine) pollStaged(done chan struct{}) {
	defer close(done)
	deadline := time.Now().Add(StageBudget)
	for {
		time.Sleep(StagePoll)
		e.Restage()
		e.mu.Lock()
		normal := e.states[TX] == dmadesc.StateNormal && e.states[RX] == dmadesc.StateNormal
		if e.nstarved.Load() == 0 || !normal || time.Now().After(deadline) {
			e.polling = nil
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
	}
}

// WaitPoller waits until the engine's staging poller returned (one
// leaves the normal state within a poll); the chip calls it as it stops.
func (e *Engine) WaitPoller(ctx context.Context) error {
	e.mu.Lock()
	done := e.polling
	e.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
