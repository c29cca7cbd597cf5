package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/neuronfs/neuronfs/fs"
)

func cmdMount(args []string) int {
	fl := newFlagSet("mount")
	var h hostFlags
	h.register(fl)
	var hm hostMode
	hm.register(fl)
	if status, ok := parseFlags("mount", fl, args); !ok {
		return status
	}
	if hm.on {
		return hm.run(h, fl.Args())
	}
	if fl.NArg() != 1 {
		return usageLine("mount", "want one MOUNTPOINT: neuronfs mount [flags] MOUNTPOINT")
	}
	mnt := fl.Arg(0)
	if status, ok := requireRoot("mount"); !ok {
		return status
	}
	if err := h.check(); err != nil {
		return usageFail("mount", err)
	}
	log, err := h.logger()
	if err != nil {
		return failLine("mount", err)
	}
	if err := preflight(); err != nil {
		return failLine("mount", err)
	}
	if err := checkMountpoint(mnt); err != nil {
		return failLine("mount", err)
	}
	// Signals are caught from the start: one arriving mid-mount still
	// ends in an orderly unmount.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	start := time.Now()
	sys, err := h.system(log)
	if err != nil {
		return failLine("mount", err)
	}
	defer sys.CloseExecTrace() // the daemon exits without closing sys
	defer h.leavePod()
	// The reaper comes first, so no instant exists where the daemon has
	// mounted but nobody would clean up after a SIGKILL.
	reaper, err := startReaper(mnt)
	if err != nil {
		log.WithError(err).Warn("no reaper: a SIGKILLed daemon will leave a dead mount (see 'umount -l')")
	}
	fsys, err := fs.Mount(sys, mnt, h.fsOptions(log))
	if err != nil {
		reaper.stop()
		return failLine("mount", mountError(err))
	}
	lowerOOMScore(log)
	log.WithFields(map[string]any{"mountpoint": mnt, "devices": len(sys.Devices), "instance": sys.Instance.Name, "fuse_transport": fsys.Transport(), "took": time.Since(start)}).Info("mounted")
	fmt.Println(mountedLine(mnt, len(sys.Devices)))

	done := make(chan struct{})
	go func() { fsys.Wait(); close(done) }()
	select {
	case s := <-sigs:
		log.WithField("signal", s).Info("unmounting")
	case <-done:
		log.Info("unmounted from outside")
	}
	reaper.stop()
	defer abortOnExit(fsys, log)
	if err := fsys.Unmount(); err != nil {
		select {
		case <-done:
		default:
			log.WithError(err).Error("unmount failed")
			return 1
		}
	}
	return 0
}
