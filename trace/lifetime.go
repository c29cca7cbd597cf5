package trace

import "bytes"

// lifetime records a fork, exec or exit of a traced task, so a replay knows
// which calls came from which process and when each process ended.
func (a *assembler) lifetime(e rawEvent) error {
	if a.dropLauncher(e) {
		return nil
	}
	r := Record{TID: e.tid, TGID: e.tgid, Time: a.wall(e.ts), FD: -1}
	switch e.kind {
	case kindFork:
		r.Op, r.Child = OpFork, int(e.args[0])
		r.Thread = int(e.args[1]) == e.tgid
		r.Untraced = !r.Thread && !a.children
	case kindExec:
		r.Op, r.Path = OpExec, string(e.data)
		if i := bytes.IndexByte(e.data, 0); i >= 0 {
			r.Path = string(e.data[:i])
		}
		// Exec closed the O_CLOEXEC fds: forget what is no longer known.
		a.forget(e.tgid)
	case kindDeath:
		code := int(e.ret)
		r.Op, r.ProcessExit = OpExit, e.args[0] == 0
		if sig := code & 0x7f; sig != 0 {
			r.Signal = sig
		} else {
			r.Status = code >> 8 & 0xff
		}
		// A call the thread was in when it died never returned.
		delete(a.pending, e.tid)
		delete(a.restarting, e.tid)
		if r.ProcessExit {
			a.forget(e.tgid)
		}
	}
	return a.record(&r)
}

// forget drops a process's fd table and mappings (it exec'd or ended), so
// a pid the kernel hands out again starts afresh.
func (a *assembler) forget(tgid int) {
	for fd, path := range a.fds[tgid] {
		if a.isDevice(path) {
			a.setFD(tgid, fd, "")
		}
	}
	delete(a.fds, tgid)
	delete(a.maps, tgid)
}
