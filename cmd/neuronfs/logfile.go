package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// The daemon's log. mount and mount --host log to their standard error
// (a terminal, or the journal of their unit) unless --log-file names a
// file. Under run, standard error is CMD's: a log record there would land
// in the middle of the program's own output (a pytest progress line), so
// run's daemon always logs to a file, by default one per run under the
// user's runtime directory, and run names it when CMD ends if it holds
// something the user should read.

// logFileFlag is --log-file FILE: absolute once set, so run's namespace
// child writes where the user's working directory said.
type logFileFlag struct{ path string }

func (f *logFileFlag) String() string { return f.path }
func (f *logFileFlag) Set(v string) error {
	if v == "" {
		f.path = ""
		return nil
	}
	abs, err := filepath.Abs(v)
	if err != nil {
		return fmt.Errorf("log file %q: %w", v, err)
	}
	// The daemon follows no link on the way (openLog): the user's own
	// links in the directory's path are resolved here.
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(dir, filepath.Base(abs))
	}
	f.path = abs
	return nil
}

const logFileUsage = "append the daemon's log records to FILE (default: standard error for mount; for run a file per run, $XDG_RUNTIME_DIR/neuronfs/run-PID.log or $TMPDIR/neuronfs-UID/run-PID.log, named when CMD ends if it holds a warning)"

// check finds a log file that cannot be made, before anything starts.
func (f *logFileFlag) check() error {
	if f.path == "" {
		return nil
	}
	// The file's directory may be missing if its parent is there: run's
	// default directory is made at the first record (lazyFile).
	dir := filepath.Dir(f.path)
	if st, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if st, err := os.Stat(filepath.Dir(dir)); err != nil || !st.IsDir() {
			return fmt.Errorf("--log-file %s: no directory %s", f.path, dir)
		}
	} else if err != nil || !st.IsDir() {
		return fmt.Errorf("--log-file %s: no directory %s", f.path, dir)
	}
	if st, err := os.Stat(f.path); err == nil && st.IsDir() {
		return fmt.Errorf("--log-file %s: a directory, want a file", f.path)
	}
	return nil
}

// output is where the log records go: standard error, or the file,
// created at the first record so that a run that logs nothing leaves
// nothing behind.
func (f *logFileFlag) output() io.Writer {
	if f.path == "" {
		return os.Stderr
	}
	return &lazyFile{path: f.path}
}

// lazyFile opens its file for appending at the first write. Writers that
// share it (logrus, go-fuse's debug log, the goroutine dump) each write
// whole records, and appends of one descriptor do not interleave.
type lazyFile struct {
	path string
	once sync.Once
	w    io.Writer
}

func (l *lazyFile) Write(p []byte) (int, error) {
	l.once.Do(func() {
		f, err := openLog(l.path)
		if err != nil {
			// Losing the records would hide what went wrong: they go
			// to standard error after one line saying why.
			fmt.Fprintf(os.Stderr, "neuronfs: cannot open the log file: %v; logging to standard error\n", err)
			l.w = os.Stderr
			return
		}
		l.w = f
	})
	return l.w.Write(p)
}

// openLog opens path for appending. run's default directory is made
// with the first record; one that existed was checked by run (runLogDir).
// Neither the file nor its directory is followed if it is a symbolic
// link: the directory may be in /tmp, where someone else could have put
// a link to a place the daemon (root under sudo) must not write.
func openLog(path string) (*os.File, error) {
	dir := filepath.Dir(path)
	os.Mkdir(dir, 0o700)
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, filepath.Base(path), unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// runLog is the log file of one run, as run (the parent of the daemon)
// sees it.
type runLog struct {
	path   string
	start  int64 // the file's size before the daemon started: older records are not this run's
	always bool  // name the file whatever it holds (more than warnings was asked for)
}

// runLogFile picks the daemon's log file for run (the user's, or the
// default) and notes where this run's records will start. With a level
// below warning, or --debug-fuse, the user asked for more than warnings:
// the file is named whatever it holds.
func runLogFile(given, level string, debugFUSE bool) (*runLog, error) {
	path := given
	if path == "" {
		dir, err := runLogDir()
		if err != nil {
			return nil, err
		}
		path = filepath.Join(dir, "run-"+strconv.Itoa(os.Getpid())+".log")
	}
	l := &runLog{path: path, always: level == "info" || level == "debug" || debugFUSE}
	if st, err := os.Stat(path); err == nil {
		l.start = st.Size()
	}
	return l, nil
}

// runLogDir is the directory of run's default log files: the user's
// runtime directory where the session has one, else one under the
// temporary directory. It must be this user's alone, since the daemon
// (root under sudo) writes there; the daemon makes it (0700) at its first
// record, so a quiet run leaves nothing.
func runLogDir() (string, error) {
	dir := filepath.Join(os.TempDir(), "neuronfs-"+strconv.Itoa(os.Geteuid()))
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" && ownDir(rt) == nil {
		dir = filepath.Join(rt, "neuronfs")
	}
	if err := ownDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("the log directory %s: %w (choose a file with --log-file)", dir, err)
	}
	return dir, nil
}

// ownDir refuses a directory that is a link, or not this user's alone.
func ownDir(dir string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("not a directory")
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return fmt.Errorf("owned by uid %d with mode %04o: want a directory only uid %d can write", st.Uid, st.Mode&0o7777, os.Geteuid())
	}
	return nil
}

// warningRecord matches a log record at warning level or above, in
// either --log-format.
var warningRecord = regexp.MustCompile(`(^|\s)level=(warning|error|fatal|panic)(\s|$)|"level":"(warning|error|fatal|panic)"`)

// report prints, when CMD has ended, the one line naming the log file if
// this run wrote a warning or an error there (or anything at all, when a
// lower level was asked for).
func (l *runLog) report() {
	f, err := os.Open(l.path)
	if err != nil {
		return // nothing was logged
	}
	defer f.Close()
	if _, err := f.Seek(l.start, io.SeekStart); err != nil {
		return
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	logged := false
	for sc.Scan() {
		if warningRecord.Match(sc.Bytes()) {
			fmt.Fprintf(os.Stderr, "neuronfs run: the daemon logged warnings or errors: see %s\n", l.path)
			return
		}
		logged = true
	}
	if logged && l.always {
		fmt.Fprintf(os.Stderr, "neuronfs run: the daemon's log is in %s\n", l.path)
	}
}
