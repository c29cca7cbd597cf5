package dma

// The engine worker. One goroutine runs per queue while it has work and
// exits when it runs dry, so idle engines cost nothing. It streams each TX
// packet (descriptors up to one marked LAST) into the RX descriptors in
// order: an RX descriptor completes when it is full or when the packet
// ends. Data moves without the engine lock held, so state queries and
// doorbells never wait for a copy.

// step is one contiguous transfer the worker performs.
type step struct {
	src, dst   uint64
	n          uint64
	txDone     bool // the TX descriptor is used up
	rxDone     bool // the RX descriptor is full or its packet ended
}

// kickLocked starts queue qid's worker unless one runs or nothing can run.
func (e *Engine) kickLocked(qid int) {
	q := &e.q[qid]
	if q.running || !e.runnableLocked(q) {
		return
	}
	q.running = true
	q.idle = make(chan struct{})
	go e.run(qid)
}

func (e *Engine) runnableLocked(q *Queue) bool {
	return q.status == QueueEnabled && e.states[TX] == StateNormal && e.states[RX] == StateNormal &&
		q.tx.pending > 0 && q.rx.pending > 0
}

// fetch returns the descriptor at r's head. It is read from the ring once
// and kept until it completes, as the prefetcher does, so a transfer that
// overwrites its own ring cannot change a descriptor under way.
func (e *Engine) fetch(r *ring) (Desc, bool) {
	if r.fetched {
		return r.cur, true
	}
	b, ok := e.mem.Slice(r.Base+uint64(r.head)*DescSize, DescSize)
	if !ok {
		return Desc{}, false
	}
	r.cur, r.fetched = Decode(b), true
	return r.cur, true
}

// nextStepLocked plans the next transfer of q, or reports why it cannot:
// status is non-zero when the queue must stop on an error.
func (e *Engine) nextStepLocked(q *Queue) (st step, status uint32, ok bool) {
	if !e.runnableLocked(q) {
		return step{}, 0, false
	}
	td, tok := e.fetch(&q.tx)
	if !tok {
		return step{}, StatusReadError, false
	}
	rd, rok := e.fetch(&q.rx)
	if !rok {
		return step{}, StatusReadError, false
	}
	if !e.opts.RingIDErrorsMasked && (td.RingID() != q.tx.ringID || rd.RingID() != q.rx.ringID) {
		return step{}, StatusRingIDError, false
	}
	txLeft := td.Len() - q.tx.off
	rxLeft := rd.Len() - q.rx.off
	n := min(txLeft, rxLeft)
	st = step{src: td.Addr + q.tx.off, dst: rd.Addr + q.rx.off, n: n}
	st.txDone = n == txLeft
	st.rxDone = n == rxLeft || (st.txDone && td.Last())
	return st, 0, true
}

func (e *Engine) run(qid int) {
	e.mu.Lock()
	q := &e.q[qid]
	for {
		st, status, ok := e.nextStepLocked(q)
		if !ok {
			if status != 0 {
				e.abortLocked(qid, status)
			}
			break
		}
		gen := q.gen
		e.mu.Unlock()
		status = e.transfer(st)
		e.mu.Lock()
		if q.gen != gen {
			continue // the queue was reset under the copy: its progress is void
		}
		if status != 0 {
			e.abortLocked(qid, status)
			break
		}
		q.tx.off += st.n
		q.rx.off += st.n
		if st.txDone {
			q.tx.complete()
		}
		if st.rxDone {
			q.rx.complete()
		}
	}
	q.running = false
	close(q.idle)
	q.idle = nil
	e.mu.Unlock()
}

// transfer moves one step's bytes; it returns the status bits of a failure.
func (e *Engine) transfer(st step) uint32 {
	src, ok := e.mem.Slice(st.src, st.n)
	if !ok {
		return StatusReadError
	}
	dst, ok := e.mem.Slice(st.dst, st.n)
	if !ok {
		return StatusWriteError
	}
	copy(dst, src)
	return 0
}

// abortLocked stops the queue and puts the failing direction of the engine
// in the abort state, as the hardware does on an AXI error.
func (e *Engine) abortLocked(qid int, status uint32) {
	q := &e.q[qid]
	q.status = QueueAborted
	q.hwStatus |= status
	if status&StatusWriteError != 0 {
		e.states[RX] = StateAbort
	} else {
		e.states[TX] = StateAbort
	}
	if e.opts.OnError != nil {
		eng, fn := e.ID, e.opts.OnError
		go fn(eng, qid, status)
	}
}
