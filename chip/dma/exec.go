package dma

import "github.com/neuronfs/neuronfs/chip/dma/dmadesc"

// The engine worker. It streams each TX packet (descriptors up to one
// marked LAST) into the RX descriptors in order: an RX descriptor
// completes when it is full or when the packet ends. A doorbell runs the
// first bytes inline, so a small transfer is done when COPY_START
// returns; the rest goes to one goroutine per queue that exits when the
// queue runs dry, so idle engines cost nothing. Data moves without the
// engine lock held, so state queries and doorbells never wait for a copy.

const (
	// inlineBytes is what a doorbell moves before handing over to a
	// worker goroutine.
	inlineBytes = 256 << 10
	// Contiguous descriptors are merged into one copy of up to
	// mergeBytes: large copies run much faster than 64 KiB ones.
	mergeBytes = 8 << 20
	mergeSteps = 1024
)

// statusUnstaged is nextStep's reason for a fed queue waiting at a
// descriptor not yet staged (feed.go): not an error, never in hwStatus.
const statusUnstaged = 1 << 31

// step is one contiguous transfer between a TX and an RX descriptor.
type step struct {
	src, dst uint64
	n        uint64
	txDone   bool     // the TX descriptor is used up
	rxDone   bool     // the RX descriptor is full or its packet ended
	red      *reducer // the TX descriptor's reduction; nil copies
}

// batch is consecutive steps whose source and destination ranges are
// contiguous, moved by one copy.
type batch struct {
	src, dst, n uint64
	red         *reducer
	steps       []step
}

// kickLocked starts queue qid's worker goroutine unless one runs or
// nothing can run.
func (e *Engine) kickLocked(qid int) {
	if e.claimLocked(qid) {
		go e.run(qid)
	}
}

// claimLocked marks queue qid as having a worker, if it needs one.
func (e *Engine) claimLocked(qid int) bool {
	q := &e.q[qid]
	if q.running || !e.runnableLocked(q, &q.tx, &q.rx) {
		return false
	}
	q.running = true
	q.idle = make(chan struct{})
	return true
}

// releaseLocked ends queue qid's worker.
func (e *Engine) releaseLocked(qid int) {
	q := &e.q[qid]
	q.running = false
	close(q.idle)
	q.idle = nil
}

// runInlineLocked serves a doorbell: the first bytes in the caller, the
// rest in a worker goroutine.
func (e *Engine) runInlineLocked(qid int) {
	if !e.claimLocked(qid) {
		return
	}
	if e.drainLocked(qid, inlineBytes) {
		go e.run(qid)
		return
	}
	e.releaseLocked(qid)
}

func (e *Engine) run(qid int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.drainLocked(qid, 0)
	e.releaseLocked(qid)
}

func (e *Engine) runnableLocked(q *Queue, tx, rx *ring) bool {
	return q.status == QueueEnabled && e.states[TX] == dmadesc.StateNormal && e.states[RX] == dmadesc.StateNormal &&
		tx.pending > 0 && rx.pending > 0
}

// fetch returns the descriptor at r's head. It is read from the ring once
// and kept until it completes, as the prefetcher does, so a transfer that
// overwrites its own ring cannot change a descriptor under way.
func (e *Engine) fetch(r *ring) (dmadesc.Desc, bool) {
	if r.fetched {
		return r.cur, true
	}
	b, ok := e.mem.Slice(r.Base+uint64(r.head)*dmadesc.Size, dmadesc.Size)
	if !ok {
		return dmadesc.Desc{}, false
	}
	r.cur, r.fetched = dmadesc.Decode(b), true
	return r.cur, true
}

// nextStep plans the next transfer from the ring states tx and rx, or
// reports why there is none: status is non-zero when the queue must stop
// on an error.
func (e *Engine) nextStep(q *Queue, tx, rx *ring) (st step, status uint32, ok bool) {
	if !e.runnableLocked(q, tx, rx) {
		return step{}, 0, false
	}
	if e.opts.Fault != nil {
		if stall, abort := e.opts.Fault(); stall {
			return step{}, 0, false
		} else if abort != 0 {
			return step{}, abort, false
		}
	}
	td, tok := e.fetch(tx)
	rd, rok := e.fetch(rx)
	if !tok || !rok {
		return step{}, StatusReadError, false
	}
	if unstaged(q, tx, rx, td, rd) {
		return step{}, statusUnstaged, false
	}
	if !e.opts.RingIDErrorsMasked && (td.RingID() != tx.ringID || rd.RingID() != rx.ringID) {
		return step{}, StatusRingIDError, false
	}
	txLeft := td.Len() - tx.off
	rxLeft := rd.Len() - rx.off
	n := min(txLeft, rxLeft)
	st = step{src: td.Addr + tx.off, dst: rd.Addr + rx.off, n: n, red: reductionOf(td.Meta)}
	st.txDone = n == txLeft
	st.rxDone = n == rxLeft || (st.txDone && td.Last())
	return st, 0, true
}

// advance applies a finished step to the ring states.
func advance(tx, rx *ring, st step) {
	tx.off += st.n
	rx.off += st.n
	if st.txDone {
		tx.complete()
	}
	if st.rxDone {
		rx.complete()
	}
}

// planLocked gathers the next batch on copies of the ring states. A batch
// stops before an error; the error is found again once the batch is done.
func (e *Engine) planLocked(q *Queue) (b batch, status uint32) {
	tx, rx := q.tx, q.rx
	for len(b.steps) < mergeSteps && b.n < mergeBytes {
		st, status, ok := e.nextStep(q, &tx, &rx)
		if !ok {
			if len(b.steps) == 0 {
				return b, status
			}
			break
		}
		if len(b.steps) > 0 && (st.src != b.src+b.n || st.dst != b.dst+b.n || st.red != b.red) {
			break
		}
		if len(b.steps) == 0 {
			b.src, b.dst, b.red = st.src, st.dst, st.red
		}
		b.n += st.n
		b.steps = append(b.steps, st)
		advance(&tx, &rx, st)
	}
	return b, 0
}

// drainLocked executes queue qid until it runs dry or stops (false), or
// until budget bytes moved with work left (true); budget 0 is unlimited.
func (e *Engine) drainLocked(qid int, budget uint64) bool {
	q := &e.q[qid]
	moved := uint64(0)
	for {
		b, status := e.planLocked(q)
		e.starveLocked(q, len(b.steps) == 0 && status == statusUnstaged)
		if len(b.steps) == 0 {
			if status != 0 && status != statusUnstaged {
				e.abortLocked(qid, status)
			}
			return false
		}
		gen := q.gen
		e.mu.Unlock()
		status = e.transfer(b.src, b.dst, b.n, b.red)
		if status == 0 {
			e.observe(qid, b.steps)
		}
		e.mu.Lock()
		if q.gen != gen {
			continue // the queue was reset under the copy: its progress is void
		}
		if status == 0 {
			for _, st := range b.steps {
				advance(&q.tx, &q.rx, st)
			}
		} else if !e.stepwiseLocked(qid, b.steps, gen) {
			return false
		}
		moved += b.n
		if budget > 0 && moved >= budget {
			return e.runnableLocked(q, &q.tx, &q.rx)
		}
	}
}

// stepwiseLocked redoes a failed batch one step at a time, so the queue
// stops exactly at the descriptor that failed. It reports whether the
// queue may go on.
func (e *Engine) stepwiseLocked(qid int, steps []step, gen uint64) bool {
	q := &e.q[qid]
	for _, st := range steps {
		e.mu.Unlock()
		status := e.transfer(st.src, st.dst, st.n, st.red)
		if status == 0 {
			e.observe(qid, []step{st})
		}
		e.mu.Lock()
		if q.gen != gen {
			return true
		}
		if status != 0 {
			e.abortLocked(qid, status)
			return false
		}
		advance(&q.tx, &q.rx, st)
	}
	return true
}

// transfer moves n bytes, or reduces them into the destination; it
// returns the status bits of a failure.
func (e *Engine) transfer(src, dst, n uint64, red *reducer) uint32 {
	from, ok := e.mem.Slice(src, n)
	if !ok {
		return StatusReadError
	}
	if red == nil {
		if !e.mem.Write(dst, from) {
			return StatusWriteError
		}
	} else {
		to, ok := e.mem.SliceWrite(dst, n)
		if !ok {
			return StatusWriteError
		}
		red.combine(to, from)
	}
	if e.opts.OnTransfer != nil {
		e.opts.OnTransfer(n)
	}
	return 0
}

// abortLocked stops the queue and puts the failing direction of the engine
// in the abort state, as the hardware does on an AXI error.
func (e *Engine) abortLocked(qid int, status uint32) {
	q := &e.q[qid]
	q.status = QueueAborted
	q.hwStatus |= status
	if status&StatusWriteError != 0 {
		e.states[RX] = dmadesc.StateAbort
	} else {
		e.states[TX] = dmadesc.StateAbort
	}
	if e.opts.OnError != nil {
		eng, fn := e.ID, e.opts.OnError
		go fn(eng, qid, status)
	}
}

// observe reports finished steps to OnCopy; the engine's lock is not held.
func (e *Engine) observe(qid int, steps []step) {
	if e.opts.OnCopy == nil {
		return
	}
	for _, st := range steps {
		e.opts.OnCopy(e.ID, qid, st.src, st.dst, st.n)
	}
}
