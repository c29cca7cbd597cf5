package trace

import (
	"errors"
	"fmt"
	"golang.org/x/sys/unix"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/ioctl"
)

// Options describe a tracing session.
type Options struct {
	Children bool
	Out      io.Writer
	// Root is where the driver's sysfs is read for the header ("/").
	Root string
	// Command and PID only go into the header.
	Command []string
	PID     int
	Log     *logrus.Entry
	// Device says which paths are devices to keep (default IsDevice); a
	// bare mount's nodes live elsewhere.
	Device func(path string) bool
}

// Session records while it runs: events flow from the probe through the
// assembler into the writer on one goroutine.
type Session struct {
	probe  *Probe
	w      *Writer
	asm    *assembler
	done   chan error
	log    *logrus.Entry
	events map[uint64]int // by syscall number, for the debug log
	// stopping ends the reader at the next drained ring.
	stopping atomic.Bool
}

// Start loads the probe and writes the header; add processes with Add.
func Start(o Options) (*Session, error) {
	if o.Root == "" {
		o.Root = "/"
	}
	if o.Log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		o.Log = logrus.NewEntry(l)
	}
	h := Header{Machine: goruntime.GOARCH, Start: time.Now().UTC(), Command: o.Command, PID: o.PID, Children: o.Children}
	h.DriverVersion, h.Architecture, h.Instance = driverFacts(o.Root)
	tab := ioctl.Default()
	if t, err := ioctl.ForVersion(h.DriverVersion); err == nil {
		tab = t
	}
	probe, err := NewProbe(ProbeOptions{Children: o.Children, Table: tab})
	if err != nil {
		return nil, err
	}
	w, err := NewWriter(o.Out, h)
	if err != nil {
		probe.Close()
		return nil, err
	}
	s := &Session{probe: probe, w: w, asm: newAssembler(tab, w.Write), done: make(chan error, 1), log: o.Log, events: map[uint64]int{}}
	if o.Device != nil {
		s.asm.isDevice = o.Device
	}
	s.asm.deviceFD = probe.SetDeviceFD
	s.asm.children = o.Children
	go func() { s.done <- s.loop() }()
	return s, nil
}

// driverFacts reads the driver version and the first device's
// architecture and the EC2 instance type from sysfs; each is "" when absent.
func driverFacts(root string) (version, arch, instance string) {
	if b, err := os.ReadFile(filepath.Join(root, "sys/module/neuron/version")); err == nil {
		version = strings.TrimSpace(string(b))
	}
	dev := filepath.Join(root, "sys/devices/virtual/neuron_device/neuron0/info/architecture")
	var parts []string
	for _, f := range []string{"arch_type", "device_name"} {
		if b, err := os.ReadFile(filepath.Join(dev, f)); err == nil {
			parts = append(parts, strings.TrimSpace(string(b)))
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "sys/class/dmi/id/product_name")); err == nil {
		instance = strings.TrimSpace(string(b))
	}
	return version, strings.Join(parts, " "), instance
}

// Add starts tracing a process (and, with Children, what it forks from
// now on).
func (s *Session) Add(pid int) error { return s.probe.Add(pid) }

// AddLauncher is Add for a launcher that will exec the command to trace
// once told to: its own threads, and its own start if the probe sees it,
// are left out of the trace (launcher.go). Call LauncherStarted once the
// launcher says it runs, before telling it to exec.
func (s *Session) AddLauncher(pid int) error {
	s.asm.launcher.Store(&launcherState{tgid: pid, children: map[int]bool{}})
	return s.probe.Add(pid)
}

// LauncherStarted marks the moment the launcher of AddLauncher is known
// to run its own program: an exec of it before then is its own start.
func (s *Session) LauncherStarted() {
	if l := s.asm.launcher.Load(); l != nil {
		var now unix.Timespec
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
		l.started.Store(uint64(now.Nano()))
	}
}

// pollInterval is how often the reader looks for events the probe did not
// wake it for.
const pollInterval = 5 * time.Millisecond

func (s *Session) loop() error {
	r := s.probe.Reader()
	var rec ringbuf.Record
	r.SetDeadline(time.Now().Add(pollInterval))
	for {
		err := r.ReadInto(&rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// The ring is drained: everything before Stop is in.
			if s.stopping.Load() {
				return nil
			}
			r.SetDeadline(time.Now().Add(pollInterval))
			continue
		}
		if err != nil {
			return fmt.Errorf("trace: reading events: %w", err)
		}
		e, err := parseEvent(rec.RawSample)
		if err != nil {
			return err
		}
		s.events[e.nr]++
		if err := s.asm.event(e); err != nil {
			return err
		}
	}
}

// Stop reads what the probe still holds, writes it out and detaches. Call
// it once the traced processes are done.
func (s *Session) Stop() error {
	s.stopping.Store(true)
	lerr := <-s.done
	s.log.WithField("events", s.events).Debug("trace stopped")
	lost, err := s.probe.Lost()
	if err == nil && lost > 0 {
		err = fmt.Errorf("trace: %d events lost (the ring buffer was full): the trace misses calls", lost)
	}
	return errors.Join(lerr, err, s.w.Flush(), s.probe.Close())
}
