package trace

import "sync/atomic"

// A command traced from its start is started by a launcher, neuronfs
// itself re-executed, which waits for the probe to follow it and then
// execs the command. The launcher is a Go program: its runtime's threads
// start before the exec and the exec ends them, so a trace would begin
// with forks and exits of threads that are no part of the command (four
// of each, seen on 6.18). They are left out: a launcher's thread forks
// before its first exec, and the deaths of threads the trace did not see
// forked after it.

// launcherState follows one launcher (the assembler's goroutine only).
type launcherState struct {
	tgid     int
	started  atomic.Uint64 // CLOCK_MONOTONIC ns by which the launcher ran its own program (LauncherStarted)
	execd    bool
	children map[int]bool // the command's threads: forked after the exec
}

// dropLauncher reports whether e is a lifetime event of the launcher's
// own threads, to be left out.
func (a *assembler) dropLauncher(e rawEvent) bool {
	l := a.launcher.Load()
	if l == nil || e.tgid != l.tgid {
		return false
	}
	switch e.kind {
	case kindExec:
		// The launcher's own start, when the probe is in time to see
		// it: its threads come after, still the launcher's.
		if m := l.started.Load(); !l.execd && (m == 0 || e.ts < m) {
			return true
		}
		l.execd = true
	case kindFork:
		if int(e.args[1]) != e.tgid { // a process, not a thread
			return false
		}
		if !l.execd {
			return true
		}
		l.children[int(e.args[0])] = true
	case kindDeath:
		// The process's end is the command's; before the command's exec
		// every thread's end is the launcher's (a Go program may exec from
		// another thread, which ends the old leader); after it, the main
		// thread and the threads forked since are the command's.
		if e.args[0] == 0 {
			return false
		}
		if !l.execd {
			return true
		}
		return e.tid != e.tgid && !l.children[e.tid]
	}
	return false
}
