package fs

import (
	"os"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/device"
)

// Unmounted serves sys with no FUSE mount at all, for run's filter host
// view (no /dev/fuse): the supervisor's direct descriptors (NewDirect)
// reach the driver, and the sysfs attributes are read from sys itself.
// Only NewDirect, CheckMmap and Abort (nothing to abort) are meaningful
// on it: it has no paths (DevicePath, OpenFor) and is never unmounted.
func Unmounted(sys *device.System, opts Options) *FS {
	log := opts.Log
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	now := time.Now()
	f := &FS{sys: sys, tgids: newTgidCache(), root: &dirNode{mtime: now}, log: log, mounted: now, behalf: newBehalfTable(), physIno: physFiles(sys), incoherent: true}
	f.abortPin.Store(-1)
	f.watch = newWatchdog(f)
	f.defaultBudget = sys.Budget(0)
	// Served until the process exits, as the daemon of run is, or until
	// CloseUnmounted (a testbed, whose process goes on).
	served := make(chan struct{})
	f.waitServed = func() { <-served }
	f.endUnmounted = sync.OnceFunc(func() { close(served) })
	f.catchSIGUSR1(opts)
	f.startDiagnostics(opts)
	sys.SetPanicHandler(func(p any) {
		log.WithField("panic", p).Error("stopping the daemon after a handler panic")
		os.Exit(panicExit)
	})
	f.startRawReaper()
	return f
}

// CloseUnmounted stops what Unmounted started (the slow-request
// watchdog, the raw-memory reaper), for a host served by a process that
// goes on after it: a testbed's filter view.
func (f *FS) CloseUnmounted() {
	f.stopRawReaper()
	if f.endUnmounted != nil {
		f.endUnmounted()
	}
}
