package replay

import (
	"encoding/gob"
	"fmt"
	"io"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/trace"
)

// Serve replays, in this process, the calls of one recorded process that
// the sequencer on conn hands it, each on an OS thread of its own per
// recorded thread, until it is told to exit (or killed).
func Serve(t *trace.Trace, o Options, conn io.ReadWriter) error {
	dec, enc := gob.NewDecoder(conn), gob.NewEncoder(conn)
	s := newState(t, o)
	threads := map[int]chan func(){}
	for {
		var q request
		if err := dec.Decode(&q); err != nil {
			return fmt.Errorf("replay worker: reading a request: %w", err)
		}
		var p reply
		switch q.Op {
		case reqStart:
			for rec, h := range q.Inherit {
				s.fds[fdKey{q.TGID, rec}] = h.FD
				s.cloexec[fdKey{q.TGID, rec}] = h.CloExec
			}
		case reqCall:
			if q.Index < 0 || q.Index >= len(t.Records) {
				return fmt.Errorf("replay worker: no record %d", q.Index)
			}
			r := &t.Records[q.Index]
			s.shared = q.Shared
			var err error
			onThread(threads, r.TID, func() { p.Result, err = s.call(r) })
			if err != nil {
				p.Err = err.Error()
			}
			p.Shared = s.shared
		case reqFDs:
			p.FDs = map[int]heldFD{}
			for k, fd := range s.fds {
				p.FDs[k.fd] = heldFD{fd, s.cloexec[k]}
			}
		case reqExec:
			// The recorded exec closed these, and the flush of each was
			// the process's as a close is.
			for k, fd := range s.fds {
				if s.cloexec[k] {
					unix.Close(fd)
					delete(s.fds, k)
					delete(s.cloexec, k)
				}
			}
		case reqThreadExit:
			if ch, ok := threads[q.TID]; ok {
				close(ch)
				delete(threads, q.TID)
			}
		case reqExit:
			os.Exit(q.Status)
		default:
			return fmt.Errorf("replay worker: unknown request %q", q.Op)
		}
		if err := enc.Encode(&p); err != nil {
			return fmt.Errorf("replay worker: replying: %w", err)
		}
	}
}

// onThread runs f on the OS thread that replays recorded thread tid,
// starting one at its first call, and waits for it.
func onThread(threads map[int]chan func(), tid int, f func()) {
	ch, ok := threads[tid]
	if !ok {
		ch = make(chan func())
		threads[tid] = ch
		go func() {
			// Never unlocked: the OS thread ends with the goroutine, as
			// the recorded thread ended.
			runtime.LockOSThread()
			for f := range ch {
				f()
			}
		}()
	}
	done := make(chan struct{})
	ch <- func() { f(); close(done) }
	<-done
}
