package exitguard

import (
	"cmp"
	"context"
	"os/exec"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/fusectl"
)

// cleanUp undoes what is left registered. The order matters: aborting
// the connections first releases a parent stuck closing a file of its
// own mount; the processes must be gone before their network namespaces
// and loop devices can go.
func (g *guard) cleanUp() {
	defer g.releaseFiles()
	g.prune()
	if len(g.mounts)+len(g.procs)+len(g.cmds) == 0 {
		return
	}
	log := g.log.WithFields(logrus.Fields{"parent": g.parent, "mounts": len(g.mounts), "processes": len(g.procs), "commands": len(g.cmds)})
	log.Warn("parent exited without undoing everything; cleaning up")
	live := g.abortMounts(log, "")
	for _, p := range g.procs {
		p.kill()
	}
	// Newest first: a mount made on top of another goes before it.
	slices.SortFunc(live, func(a, b mountEntry) int { return cmp.Compare(b.id, a.id) })
	for _, e := range live {
		if err := unix.Unmount(e.dir, unix.MNT_DETACH); err != nil {
			log.WithError(err).WithField("dir", e.dir).Warn("unmount")
		}
	}
	deadline := time.Now().Add(killBudget)
	for _, p := range g.procs {
		for !ended(p.pidfd) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		unix.Close(p.pidfd)
	}
	ids := make([]uint64, 0, len(g.cmds))
	for id := range g.cmds {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	for _, id := range ids {
		runUndo(log, g.cmds[id])
	}
}

// abortMounts aborts the connections of the registered FUSE mounts that
// are still in place, and returns every registered mount in place. A
// non-empty why is logged when there is something to abort.
func (g *guard) abortMounts(log *logrus.Entry, why string) []mountEntry {
	table, err := mountTable()
	if err != nil {
		log.WithError(err).Error("mount table")
	}
	var live []mountEntry
	for _, e := range g.mounts {
		if has(table, e) {
			live = append(live, e)
		}
	}
	for _, e := range live {
		if !e.fuse() {
			continue
		}
		if why != "" {
			log.WithField("dir", e.dir).Warnf("%s: aborting the FUSE connection", why)
		}
		if err := fusectl.Abort(fusectl.Conn(e.major, e.minor)); err != nil {
			log.WithError(err).WithField("dir", e.dir).Warn("abort")
		}
	}
	return live
}

func runUndo(log *logrus.Entry, argv []string) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdBudget)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = cleanEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		log.WithError(err).WithField("command", argv).Warnf("undo: %s", out)
	}
}

// releaseFiles ends the file holder, whose exit closes what the parent
// left open; the registered mounts are aborted by then, so no close waits
// on a server that is gone.
func (g *guard) releaseFiles() {
	if g.holder == nil {
		return
	}
	unix.PidfdSendSignal(g.holder.pidfd, unix.SIGKILL, nil, 0)
	deadline := time.Now().Add(killBudget)
	for !ended(g.holder.pidfd) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !ended(g.holder.pidfd) {
		g.log.WithField("pid", g.holder.pid).Warn("the file holder is still closing the parent's files (a mount not registered with the guard?)")
	}
	unix.Close(g.holder.pidfd)
	g.holder = nil
}
