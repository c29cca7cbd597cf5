package chardev

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// A shell's `echo 1 > ATTR` opens the attribute (a memfd from FDBase up,
// openAttr), then moves the descriptor onto 1 with dup2: below FDBase
// the filter sends no writes, and the write would land in the memfd
// unseen. So the view answers a dup2/dup3 of a write-only attribute
// descriptor onto a number below FDBase by installing there, instead of
// the copy, the write end of a pipe whose reader in the daemon applies
// each write as the attribute's store. The pipe is in packet mode
// (O_DIRECT): each read takes one write, up to PIPE_BUF (a page, all
// sysfs hands a store), so stores keep the writes' boundaries.
//
// A pipe's write returns as soon as the pipe holds it: a store's errno is
// not the writer's (it is logged), and the store is applied a moment
// later. Within that moment the program's next call that the daemon sees
// waits (settle) until what the pipes hold has been applied, so a read of
// the attribute or of the control files after the write sees it.

// settleBound is how long a call waits for the pipes to be applied: a
// store takes microseconds, so only a stuck one (or an applier not
// scheduled on a machine far overloaded) reaches it.
const settleBound = 5 * time.Second

// pipeBuf is Linux's PIPE_BUF: a packet-mode pipe's largest packet, and
// sysfs's page. (TIOCINQ below is FIONREAD, which a pipe answers.)
const pipeBuf = 4096

// attrPipes are the live attribute pipes of a supervisor.
type attrPipes struct {
	count atomic.Int32 // len(live), read without the lock
	mu    lockrank.Mutex[lockrank.Transport]
	live  map[*attrPipe]bool // guarded by mu; a leaf
	wg    sync.WaitGroup     // the appliers
}

// attrPipe is one pipe's read end and the store its writes go to.
type attrPipe struct {
	r     *os.File // non-blocking, on Go's poller
	store func([]byte) unix.Errno
	log   *logrus.Entry
	// busy is set from before a read until its store has returned, so
	// settle never sees an empty pipe whose write is not yet applied.
	busy atomic.Bool
}

// handleAttrDupLow answers a dup2/dup3 of task n.Pid's write-only
// attribute descriptor oldfd onto newfd, below FDBase, with a pipe's
// write end at newfd (cloexec as dup3 asks). It reports false, leaving
// the call to handleDup2, for any other descriptor.
func (s *Supervisor) handleAttrDupLow(n *seccompNotif, oldfd, newfd int32, cloexec bool) bool {
	i, ok := s.attrIndex(n.Pid, oldfd)
	if !ok || s.hasAccess(n.Pid, oldfd, unix.O_RDONLY) {
		return false // an O_RDWR copy stays the memfd (docs/mount-run.md)
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_DIRECT|unix.O_CLOEXEC); err != nil {
		s.respond(n.ID, -1, errnoOf(err), 0)
		return true
	}
	// Only the daemon's end: the writer's blocks as a file's write would.
	if err := unix.SetNonblock(p[0], true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		s.respond(n.ID, -1, errnoOf(err), 0)
		return true
	}
	log := s.log.WithFields(logrus.Fields{"tid": n.Pid, "attr": i, "fd": newfd})
	// Applied from before the install: the task writes as soon as it runs.
	s.pipes.start(&attrPipe{r: os.NewFile(uintptr(p[0]), "neuronfs-attr-pipe:"+strconv.Itoa(i)), store: s.paths.Attr(i).Store, log: log})
	add := seccompNotifAddfd{ID: n.ID, Flags: unix.SECCOMP_ADDFD_FLAG_SETFD | unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(p[1]), Newfd: uint32(newfd)}
	if cloexec {
		add.NewfdFlags = unix.O_CLOEXEC
	}
	_, e := addfdUninterrupted(s.listener, &add)
	unix.Close(p[1]) // the task's copy is the only writer: its close ends the applier
	if e != 0 && e != unix.ENOENT {
		s.respond(n.ID, -1, e, 0)
		return true
	}
	log.Debug("attribute descriptor copied below the filter's range: a pipe applies its writes")
	return true
}

// start registers pipe a and runs its applier.
func (ps *attrPipes) start(a *attrPipe) {
	ps.mu.Lock()
	if ps.live == nil {
		ps.live = map[*attrPipe]bool{}
	}
	ps.live[a] = true
	ps.count.Store(int32(len(ps.live)))
	ps.mu.Unlock()
	ps.wg.Add(1)
	go func() {
		defer ps.wg.Done()
		a.apply()
		ps.mu.Lock()
		delete(ps.live, a)
		ps.count.Store(int32(len(ps.live)))
		ps.mu.Unlock()
		a.r.Close()
	}()
}

// apply hands each write to the store until every write end is closed or
// stop set a deadline (then after what the pipe still holds).
func (a *attrPipe) apply() {
	rc, err := a.r.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, pipeBuf)
	for {
		var k int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			a.busy.Store(true)
			k, rerr = unix.Read(int(fd), buf)
			if rerr == unix.EAGAIN || rerr == unix.EINTR {
				a.busy.Store(false)
				return false // wait for the next write
			}
			return true
		})
		if err != nil || rerr != nil || k == 0 {
			a.busy.Store(false)
			return // closed, stopped, or every writer gone (EOF)
		}
		if errno := a.store(buf[:k]); errno != 0 {
			a.log.WithError(errno).Debug("a write through the pipe: the store refused it (the writer was told it succeeded)")
		}
		a.busy.Store(false)
	}
}

// pending reports whether pipe a holds a write not yet applied.
func (a *attrPipe) pending() bool {
	if a.busy.Load() {
		return true
	}
	rc, err := a.r.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	if rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }) != nil {
		return false // closed: applied, or its writers gone
	}
	return n > 0 || a.busy.Load()
}

// settle waits (up to settleBound) until every write the pipes hold has
// been applied: the caller's earlier writes, before its call is served.
func (ps *attrPipes) settle() {
	if ps.count.Load() == 0 {
		return
	}
	ps.mu.Lock()
	list := make([]*attrPipe, 0, len(ps.live))
	for a := range ps.live {
		list = append(list, a)
	}
	ps.mu.Unlock()
	lockrank.AssertUnlocked("chardev: waiting for attribute pipes")
	deadline := time.Now().Add(settleBound)
	for _, a := range list {
		for a.pending() {
			if time.Now().After(deadline) {
				a.log.WithField("bound", settleBound).Warn("a write through an attribute pipe is still not applied: the call goes ahead")
				return
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// stop ends the appliers once they have applied what their pipes hold
// (Serve has ended: no filtered task is left to write).
func (ps *attrPipes) stop() {
	ps.mu.Lock()
	for a := range ps.live {
		// A deadline, not a close: the applier still reads what is there.
		if err := a.r.SetReadDeadline(time.Now()); err != nil && !errors.Is(err, os.ErrClosed) {
			a.r.Close()
		}
	}
	ps.mu.Unlock()
	ps.wg.Wait()
}
