package replay

import (
	"encoding/gob"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/trace"
)

// Run replays a trace. Each recorded process is replayed by a worker
// process of its own (o.Worker runs one, which calls Serve), so what the
// driver keeps per process (attach slots, chunk owners, marks) is kept per
// process again. Calls go in the recorded order, one at a time, each to
// its process's worker; a recorded fork starts a worker with the device
// fds its parent's held, and a recorded death ends it the same way (a
// SIGKILL as a SIGKILL), so what it held is released there.
func Run(t *trace.Trace, o Options) ([]Result, error) {
	if len(o.Worker) == 0 {
		return nil, errors.New("replay: no worker command")
	}
	q := &sequencer{t: t, o: o, workers: map[int]*worker{}, sh: shared{Handles: map[uint64]uint64{}, PIDs: map[int]uint64{}}}
	defer q.stop()
	var out []Result
	for i := range t.Records {
		r := &t.Records[i]
		res, row, err := q.step(i, r)
		if err != nil {
			return out, fmt.Errorf("replay seq %d: %w", r.Seq, err)
		}
		if !row {
			continue
		}
		res.Seq = r.Seq
		out = append(out, res)
		if o.Strict && res.Status == Differ {
			break
		}
	}
	return out, nil
}

type sequencer struct {
	t       *trace.Trace
	o       Options
	workers map[int]*worker // by recorded tgid, while alive
	sh      shared
}

// maxWorkers bounds the replayers alive at once, each a process: a trace
// is untrusted, and one of a million processes that never exit must not
// start a million. Far above what an instance runs (a process per
// NeuronCore: 128 on a trn2.48xlarge).
const maxWorkers = 512

// full says a new process would be over the limit of live replayers.
func (q *sequencer) full() bool {
	limit := q.o.maxWorkers
	if limit == 0 {
		limit = maxWorkers
	}
	return len(q.workers) >= limit
}

func (q *sequencer) fullWhy() string {
	return fmt.Sprintf("%d recorded processes are alive already, replay's limit: this one's calls are not replayed", len(q.workers))
}

type worker struct {
	cmd  *exec.Cmd
	conn *os.File
	enc  *gob.Encoder
	dec  *gob.Decoder
}

// step replays record i; row says whether it makes a row of the report
// (calls do, and forks of processes whose calls were not recorded).
func (q *sequencer) step(i int, r *trace.Record) (_ Result, row bool, _ error) {
	switch r.Op {
	case trace.OpFork:
		switch {
		case r.Thread:
			return Result{}, false, nil // a thread starts at its first call
		case r.Untraced:
			return skipped(fmt.Sprintf("fork %d", r.Child),
				fmt.Sprintf("not recorded: the calls of process %d (trace --children follows it)", r.Child)), true, nil
		}
		if q.full() {
			return skipped(fmt.Sprintf("fork %d", r.Child), q.fullWhy()), true, nil
		}
		return Result{}, false, q.fork(r.TGID, r.Child)
	case trace.OpExec:
		if w := q.workers[r.TGID]; w != nil {
			_, err := w.roundTrip(request{Op: reqExec})
			return Result{}, false, err
		}
		return Result{}, false, nil
	case trace.OpExit:
		if q.workers[r.TGID] == nil {
			return Result{}, false, nil // never started: no fork of it, no call by it
		}
		if r.ProcessExit {
			return Result{}, false, q.end(r.TGID, r.Signal, r.Status)
		}
		_, err := q.workers[r.TGID].roundTrip(request{Op: reqThreadExit, TID: r.TID})
		return Result{}, false, err
	}
	w := q.workers[r.TGID]
	if w == nil {
		// A process whose start the trace does not hold (the traced
		// command itself, or one traced while running).
		if q.full() {
			return skipped(fmt.Sprintf("%s (process %d)", r.Op, r.TGID), q.fullWhy()), true, nil
		}
		var err error
		if w, err = q.start(r.TGID, nil); err != nil {
			return Result{}, false, err
		}
	}
	p, err := w.roundTrip(request{Op: reqCall, Index: i, Shared: q.sh})
	if err != nil {
		return Result{}, false, err
	}
	q.sh = p.Shared
	return p.Result, true, nil
}

// fork starts the worker of a new process with the device fds its
// parent's worker holds, as a forked child inherits them.
func (q *sequencer) fork(parent, child int) error {
	var files []*os.File
	inherit := map[int]heldFD{}
	if pw := q.workers[parent]; pw != nil {
		p, err := pw.roundTrip(request{Op: reqFDs})
		if err != nil {
			return err
		}
		pidfd, err := unix.PidfdOpen(pw.cmd.Process.Pid, 0)
		if err != nil {
			return fmt.Errorf("fork of %d: opening its parent's replayer: %w", child, err)
		}
		defer unix.Close(pidfd)
		for rec, h := range p.FDs {
			dup, err := unix.PidfdGetfd(pidfd, h.FD, 0)
			if err != nil {
				return fmt.Errorf("fork of %d: fd %d of its parent's replayer: %w", child, h.FD, err)
			}
			f := os.NewFile(uintptr(dup), fmt.Sprintf("inherited fd %d", rec))
			defer f.Close()
			files = append(files, f)
			inherit[rec] = heldFD{3 + len(files), h.CloExec} // after the socket, fd 3
		}
	}
	_, err := q.start(child, inherit, files...)
	return err
}

// start runs the worker of a recorded process.
func (q *sequencer) start(tgid int, inherit map[int]heldFD, files ...*os.File) (*worker, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("replayer of process %d: %w", tgid, err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "replay worker"), os.NewFile(uintptr(fds[1]), "replay sequencer")
	defer theirs.Close()
	cmd := exec.Command(q.o.Worker[0], q.o.Worker[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.ExtraFiles = append([]*os.File{theirs}, files...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		ours.Close()
		return nil, fmt.Errorf("replayer of process %d: %w", tgid, err)
	}
	w := &worker{cmd: cmd, conn: ours, enc: gob.NewEncoder(ours), dec: gob.NewDecoder(ours)}
	q.workers[tgid] = w
	q.sh.PIDs[tgid] = uint64(cmd.Process.Pid)
	if _, err := w.roundTrip(request{Op: reqStart, TGID: tgid, Inherit: inherit}); err != nil {
		return nil, fmt.Errorf("replayer of process %d: %w", tgid, err)
	}
	return w, nil
}

func (w *worker) roundTrip(q request) (reply, error) {
	var p reply
	if err := w.enc.Encode(&q); err != nil {
		return p, fmt.Errorf("replayer %d: %w", w.cmd.Process.Pid, err)
	}
	if err := w.dec.Decode(&p); err != nil {
		return p, fmt.Errorf("replayer %d: %w", w.cmd.Process.Pid, err)
	}
	if p.Err != "" {
		return p, errors.New(p.Err)
	}
	return p, nil
}

// end replays a process's death and waits until it is gone, as the
// recorded process was before the next call: by the recorded signal, or
// an exit with the recorded status. A signal Go's runtime would survive
// is followed by SIGKILL: what matters is what the death releases.
func (q *sequencer) end(tgid, sig, status int) error {
	w := q.workers[tgid]
	delete(q.workers, tgid)
	defer w.conn.Close()
	if sig != 0 {
		w.cmd.Process.Signal(syscall.Signal(sig))
		if sig != int(syscall.SIGKILL) {
			w.cmd.Process.Signal(syscall.SIGKILL)
		}
	} else if err := w.enc.Encode(&request{Op: reqExit, Status: status}); err != nil {
		w.cmd.Process.Kill()
	}
	err := w.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return fmt.Errorf("replayer of process %d: %w", tgid, err)
	}
	return nil
}

// stop ends the workers of processes the trace did not see end.
func (q *sequencer) stop() {
	for tgid := range q.workers {
		q.end(tgid, 0, 0)
	}
}
