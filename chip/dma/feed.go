package dma

import "github.com/neuronfs/neuronfs/chip/dma/dmadesc"

// Device-fed queues. A queue whose tail the device moves (the doorbell
// arming the exec queue, a trigger descriptor or a program's CTRL_WR
// writing a tail-increment register) may be told of descriptors before
// the host wrote them: the runtime releases a model's queues one
// increment at a time, and an increment can come before the copy that
// stages its descriptors. Such a queue runs a descriptor only once it is
// staged (non-empty, carrying the ring id of its lap, as Arm finds them)
// and otherwise waits there, as a ring waits for its tail, until
// Restage finds it written. A queue the host rings (COPY_START) runs
// what it is told, as before: a stale descriptor there is a ring-id
// error.

// staged reports whether d is a fresh descriptor of the lap whose ring id
// is id.
func staged(d dmadesc.Desc, id uint8) bool { return d.LenCtrl != 0 && d.RingID() == id }

// feedLocked marks q as fed by the device (or not: its host rings it, or
// it was reset), forgetting a wait.
func (e *Engine) feedLocked(q *Queue, fed bool) {
	q.fed = fed
	e.starveLocked(q, false)
}

// starveLocked records whether q waits for a descriptor to be staged.
func (e *Engine) starveLocked(q *Queue, starved bool) {
	if q.starved == starved {
		return
	}
	q.starved = starved
	d := int32(-1)
	if starved {
		d = 1
	}
	e.nstarved.Add(d)
	if s := e.opts.Starved; s != nil {
		s.Add(d)
	}
	if starved {
		e.pollStagedLocked()
	}
}

// unstaged reports whether a fed queue must wait at descriptors tx, rx:
// either is not yet staged.
func unstaged(q *Queue, tx, rx *ring, td, rd dmadesc.Desc) bool {
	return q.fed && (!staged(td, tx.ringID) || !staged(rd, rx.ringID))
}

// Restage resumes the queues that wait for a descriptor to be staged
// (after the host wrote device memory); it costs one atomic load when
// none waits.
func (e *Engine) Restage() {
	if e.nstarved.Load() == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range e.q {
		if e.q[i].starved {
			e.kickLocked(i)
		}
	}
}

// Starved reports whether queue qid waits for a descriptor to be staged.
func (e *Engine) Starved(qid int) bool {
	if e.nstarved.Load() == 0 {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.q[qid%QueuesPerEngine].starved
}

// Staged returns up to limit descriptors staged past each side's tail of
// queue qid (what Arm would make available), without arming them.
func (e *Engine) Staged(qid int, limit uint32) (tx, rx []dmadesc.Desc) {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := &e.q[qid%QueuesPerEngine]
	if q.status != QueueEnabled {
		return nil, nil
	}
	e.walkStagedLocked(&q.tx, limit, func(d dmadesc.Desc) { tx = append(tx, d) })
	e.walkStagedLocked(&q.rx, limit, func(d dmadesc.Desc) { rx = append(rx, d) })
	return tx, rx
}
