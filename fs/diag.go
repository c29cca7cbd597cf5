package fs

import (
	"bytes"
	"context"
	"os"
	"os/signal"
	goruntime "runtime"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/sirupsen/logrus"
)

// Diagnosing a hang: the slow-request log (watchdog.go), a goroutine dump
// on SIGUSR1 (Options.DumpOnSIGUSR1), and the file neuronfs/goroutines,
// which reads as a dump taken at the time of the read.

// GoroutinesFile is the control file that reads as a dump of every
// goroutine's stack, relative to the mount point.
const GoroutinesFile = ControlDir + "/goroutines"

// maxDump bounds a goroutine dump (runtime.Stack stops there).
const maxDump = 64 << 20

// GoroutineDump returns the stacks of every goroutine of the process, in
// the format of an unrecovered panic. The world stops for the time it
// takes to walk the stacks; serving goes on afterwards.
func GoroutineDump() []byte {
	buf := make([]byte, 256<<10)
	for {
		n := goruntime.Stack(buf, true)
		if n < len(buf) || len(buf) >= maxDump {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// countGoroutines counts the goroutines of a dump.
func countGoroutines(dump []byte) int {
	if len(dump) == 0 {
		return 0
	}
	return bytes.Count(dump, []byte("\n\ngoroutine ")) + 1
}

// logDump writes a goroutine dump to the log: a warning record, then, with
// the text formatter, the stacks as they are (readable, between marker
// lines) on the log's output; with the JSON formatter, in the record's
// "stacks" field. force writes it even when warnings are filtered out
// (someone asked for it).
func logDump(log *logrus.Entry, reason string, force bool) {
	if !force && !log.Logger.IsLevelEnabled(logrus.WarnLevel) {
		return
	}
	dump := GoroutineDump()
	e := log.WithFields(logrus.Fields{"reason": reason, "goroutines": countGoroutines(dump), "bytes": len(dump)})
	if _, ok := log.Logger.Formatter.(*logrus.JSONFormatter); ok {
		e = e.WithField("stacks", string(dump))
		if log.Logger.IsLevelEnabled(logrus.WarnLevel) {
			e.Warn("goroutine dump")
			return
		}
		// Forced past the level filter: format the record here.
		e.Time, e.Level, e.Message = time.Now(), logrus.WarnLevel, "goroutine dump"
		if b, err := e.Bytes(); err == nil {
			log.Logger.Out.Write(b)
		}
		return
	}
	e.Warn("goroutine dump follows")
	var b bytes.Buffer
	b.Grow(len(dump) + 128)
	b.WriteString("=== neuronfs goroutine dump (" + reason + ", " + time.Now().Format(time.RFC3339Nano) + ") ===\n")
	b.Write(dump)
	if len(dump) > 0 && dump[len(dump)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString("=== end of goroutine dump ===\n")
	// One write, so other log lines do not land inside the dump.
	log.Logger.Out.Write(b.Bytes())
}

// catchSIGUSR1 takes SIGUSR1 over before anything is mounted: its default
// action ends the process, and a signal sent as soon as the tree shows
// must find the handler in place.
func (f *FS) catchSIGUSR1(opts Options) {
	if opts.DumpOnSIGUSR1 {
		f.usr1 = make(chan os.Signal, 1)
		signal.Notify(f.usr1, syscall.SIGUSR1)
	}
}

// releaseSIGUSR1 gives SIGUSR1 back after a mount that failed.
func (f *FS) releaseSIGUSR1() {
	if f.usr1 != nil {
		signal.Stop(f.usr1)
	}
}

// startDiagnostics runs the slow-request watchdog, and the SIGUSR1 dump
// when asked, for as long as the mount is served.
func (f *FS) startDiagnostics(opts Options) {
	done := make(chan struct{})
	go func() {
		f.waitServed()
		close(done)
	}()
	go f.watch.run(done)
	sigs := f.usr1
	if sigs == nil {
		return
	}
	go func() {
		defer signal.Stop(sigs)
		for {
			select {
			case <-done:
				return
			case <-sigs:
				logDump(f.log, "SIGUSR1", true)
			}
		}
	}()
}

// addDiagnostics adds the control files of this file to the tree.
func (f *FS) addDiagnostics(ctx context.Context) {
	f.add(ctx, GoroutinesFile, &dumpNode{mtime: f.mounted}, syscall.S_IFREG)
	f.add(ctx, TransportFile, &transportNode{fsys: f}, syscall.S_IFREG)
}

// dumpNode is neuronfs/goroutines: root may read it (0400, enforced by
// the kernel's default_permissions). Each open file takes its dump at its
// first read (and again at every read from offset 0), so a reader that
// reads in pieces gets one consistent dump, however large.
type dumpNode struct {
	gofs.Inode
	mtime time.Time
}

var (
	_ gofs.NodeOpener    = (*dumpNode)(nil)
	_ gofs.NodeGetattrer = (*dumpNode)(nil)
)

func (n *dumpNode) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o400
	out.Size = sysfsAttrSize // readers must read to EOF, as with sysfs
	out.Nlink = 1
	out.SetTimes(&n.mtime, &n.mtime, &n.mtime)
	return 0
}

func (n *dumpNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return nil, 0, syscall.EACCES
	}
	return &dumpFile{}, fuse.FOPEN_DIRECT_IO, 0
}

// dumpFile is one open of neuronfs/goroutines.
type dumpFile struct {
	mu      sync.Mutex // go-fuse may serve two reads of one handle at once
	content []byte
}

var _ gofs.FileReader = (*dumpFile)(nil)

func (f *dumpFile) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if off == 0 || f.content == nil {
		f.content = GoroutineDump()
	}
	if off >= int64(len(f.content)) {
		return fuse.ReadResultData(nil), 0
	}
	end := min(off+int64(len(dest)), int64(len(f.content)))
	return fuse.ReadResultData(f.content[off:end]), 0
}
