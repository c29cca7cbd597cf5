package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/hostview"
	"github.com/neuronfs/neuronfs/ioctl"
)

// hostFlags are the flags that describe the emulated host; mount and run
// share them, and run relays them to its namespace child (relayArgs).
type hostFlags struct {
	instance string
	devices  int
	arch     string
	revision uint
	major    uint
	logLevel string
	logFmt   string // text or json
	logFile  logFileFlag
	debug    bool
	degraded bool
	strict   bool
	driver   string
	// The exec doorbell: which semaphore rings it, how long a run takes.
	inferenceStart int
	execLatency    time.Duration
	hangEnd        time.Duration // 0: never
	timeScale      float64
	inject         string
	pod            podFlags
	podSock        io.Closer // the pod coordinator system built, if it needs closing
	transport      transportFlag
	backing        backingFlag
	memLimit       limitFlag
	execTrace      traceFlag
}

const transportEnv = fs.TransportEnv

func defaultTransport() transportFlag {
	if env := os.Getenv(fs.TransportEnv); env != "" {
		return transportFlag(env)
	}
	return fs.TransportAuto
}

// transportFlag is --fuse-transport: auto, uring or classic. Its default
// comes from $NEURONFS_FUSE_TRANSPORT (the suite runs once per transport),
// else auto.
type transportFlag string

func (t *transportFlag) String() string { return string(*t) }
func (t *transportFlag) Set(v string) error {
	switch v {
	case fs.TransportAuto, fs.TransportURing, fs.TransportClassic:
		*t = transportFlag(v)
		return nil
	}
	return fmt.Errorf("want auto, uring or classic")
}

func (h *hostFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&h.instance, "instance", "", "EC2 instance type to emulate (default trn2.48xlarge, or the default of --arch); see 'neuronfs instances'")
	fs.IntVar(&h.devices, "devices", 0, "number of devices (default: the instance's)")
	fs.StringVar(&h.arch, "arch", "", "architecture: v2 (Trn1/Inf2), v3 (Trn2) or v4 (Trn3)")
	fs.UintVar(&h.revision, "revision", 0, "PCI revision id reported by DEVICE_BASIC_INFO (240 = hardware emulator, 255 = QEMU)")
	fs.UintVar(&h.major, "major", 0, "character-device major of the emulated driver (default: a free dynamic major)")
	fs.StringVar(&h.logLevel, "log-level", "warning", "log level: debug, info, warning, error")
	fs.StringVar(&h.logFmt, "log-format", "text", "log format: text or json (one object per line)")
	fs.Var(&h.logFile, "log-file", logFileUsage)
	fs.BoolVar(&h.debug, "debug-fuse", false, "log every FUSE request")
	fs.StringVar(&h.driver, "driver-version", ioctl.DefaultVersion, "emulated driver version: "+strings.Join(ioctl.Versions(), ", "))
	fs.BoolVar(&h.strict, "strict", false, "refuse and log one process's use of memory another process allocated (the driver allows it)")
	fs.BoolVar(&h.degraded, "degraded-mmap", false, "start even if mmap of device nodes cannot share memory with the daemon (no FUSE passthrough)")
	fs.IntVar(&h.inferenceStart, "inference-start", -1, "index of the inference-start semaphore whose increments ring a core's exec doorbell (-1: any, until a request teaches the core its doorbell)")
	fs.DurationVar(&h.execLatency, "exec-latency", 0, "time an emulated execution takes between its START and END records")
	fs.DurationVar(&h.hangEnd, "hang-end", device.DefaultHangEnd, "time a run may wait on a Q7 core or TOP_SP (not emulated) before it ends with error records in the core's ERROR queue (0: never)")
	fs.Float64Var(&h.timeScale, "time-scale", device.DefaultTimeScale, "factor on the driver's deadlines and poll intervals (1 = real durations)")
	fs.StringVar(&h.inject, "inject", "", "faults to inject from the start, comma-separated: reset-fail, dma-abort, dma-stall, alloc-fail, fwio-fail, power-invalid, ecc-sram=N, ecc-hbm=N, hbm-repair=none|pending|failed, fail:CMD:ERRNO:N|N+|P%:SEED (later: write the file faults in the control directory, $NEURONFS_CONTROL under run, MOUNTPOINT/neuronfs under mount)")
	h.transport = defaultTransport()
	fs.Var(&h.transport, "fuse-transport", "FUSE transport: auto (io_uring where the kernel offers it), uring or classic; $"+transportEnv+" sets the default")
	if env := os.Getenv(device.BackingEnv); env != "" {
		if err := h.backing.Set(env); err != nil {
			h.backing.envErr = fmt.Errorf("$%s: %w", device.BackingEnv, err)
		}
	}
	fs.Var(&h.backing, "memory-backing", "where device memory lives: memfd (host RAM, the default), file:DIR (sparse files in DIR, which the kernel can write back and reclaim; where DIR's files end before the chips' highest address, as on ext4, through a compact store) or store:DIR (always through the compact store); $"+device.BackingEnv+" sets the default")
	fs.Var(&h.memLimit, "memory-limit", "cap on the device memory the backing holds, e.g. 8G, or none (default: half of host RAM for memfd, none for file)")
	fs.Var(&h.execTrace, "exec-trace", execTraceUsage)
	h.pod.register(fs)
}

// fsOptions returns the mount options the flags ask for.
func (h *hostFlags) fsOptions(log *logrus.Entry) fs.Options {
	return fs.Options{Debug: h.debug, Log: log, DegradedMmap: h.degraded, DumpOnSIGUSR1: true, Transport: string(h.transport)}
}

// defaultInstances picks an instance when only --arch is given.
var defaultInstances = map[dhal.Arch]string{dhal.V2: "trn1.32xlarge", dhal.V3: "trn2.48xlarge", dhal.V4: "trn3.48xlarge"}

func parseArch(s string) (dhal.Arch, error) {
	switch strings.ToLower(strings.TrimPrefix(strings.ToLower(s), "arch")) {
	case "":
		return 0, nil
	case "v2", "2", "trn1", "inf2":
		return dhal.V2, nil
	case "v3", "3", "trn2":
		return dhal.V3, nil
	case "v4", "4", "trn3":
		return dhal.V4, nil
	}
	return 0, fmt.Errorf("unknown architecture %q (want v2, v3 or v4)", s)
}

func (h *hostFlags) logger() (*logrus.Entry, error) {
	lvl, err := logrus.ParseLevel(h.logLevel)
	if err != nil {
		return nil, err
	}
	l := logrus.New()
	l.SetOutput(h.logFile.output())
	l.SetLevel(lvl)
	if l.Formatter, err = logFormatter(h.logFmt); err != nil {
		return nil, err
	}
	return logrus.NewEntry(l).WithField("pid", os.Getpid()), nil
}

// system builds the emulated host the flags describe.
func (h *hostFlags) system(log *logrus.Entry) (*device.System, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	arch, err := parseArch(h.arch)
	if err != nil {
		return nil, err
	}
	major := uint32(h.major)
	if major == 0 {
		if major, err = hostview.FreeMajor(); err != nil {
			return nil, err
		}
		h.major = uint(major)
	}
	var start *uint32
	if h.inferenceStart >= 0 {
		v := uint32(h.inferenceStart)
		start = &v
	}
	podCfg, serial, sock, err := h.pod.config(h.instance, log)
	if err != nil {
		return nil, err
	}
	sys, err := device.NewSystem(device.Config{
		InferenceStart: start,
		ExecLatency:    h.execLatency,
		HangEnd:        hangEndConfig(h.hangEnd),
		TimeScale:      h.timeScale,
		Instance:       h.instance,
		Devices:        h.devices,
		Arch:           arch,
		Revision:       uint32(h.revision),
		Major:          major,
		Strict:         h.strict,
		DriverVersion:  h.driver,
		Pod:            podCfg,
		NodeSerial:     serial,
		Backing:        h.backing.b,
		MemoryLimit:    h.memLimit.n,
		ExecTrace:      h.execTrace.path,
		Log:            log,
	})
	if err != nil {
		if sock != nil {
			sock.Close()
		}
		return nil, err
	}
	h.podSock = sock
	if err := sys.Faults().Apply(h.inject); err != nil {
		sys.Close()
		h.leavePod()
		return nil, err
	}
	return sys, nil
}

// leavePod stops the pod this daemon hosts, if any (its members' links
// then fail until one of them hosts it).
func (h *hostFlags) leavePod() {
	if h.podSock != nil {
		h.podSock.Close()
	}
}

// hangEndConfig is --hang-end as device.Config takes it: there 0 is the
// default and a negative duration never.
func hangEndConfig(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
