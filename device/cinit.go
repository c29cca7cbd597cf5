package device

import (
	"syscall"
	"time"

	"github.com/neuronfs/neuronfs/ioctl"
)

// Core-init states: the runtime asks to start initialising a core; one
// process wins and the others wait for it to complete.
const (
	cinitStarted   uint32 = 1
	cinitCompleted uint32 = 2
	cinitInvalid   uint32 = 3 // initial, and after a reset of the core
)

// cinitWait is how long a second starter waits for the first to complete
// (the driver: 10 × 500 ms).
const cinitWait = 10 * 500 * time.Millisecond

// validCore is the driver's ncdev_ncid_valid: the real core count, E2BIG.
func validCore(s *System, nc uint32) Result {
	if nc >= uint32(s.Arch.CoresPerDevice) {
		return Errno(syscall.E2BIG)
	}
	return 0
}

func cinitSetState(r *Request, v *ioctl.CInitSet) Result {
	if res := validCore(r.Sys(), v.NCID); res != 0 {
		return res
	}
	d := r.Dev()
	d.mu.Lock()
	state := &d.cinit[v.NCID]
	switch v.State {
	case cinitStarted:
		switch *state {
		case cinitInvalid:
			*state = cinitStarted
			d.wait.notifyLocked()
		case cinitStarted:
			// Another process is initialising: wait for it, but not
			// forever; the caller decides from new_state.
			d.wait.waitLocked(cinitWait, r.Caller.Gone, func() bool { return *state == cinitCompleted })
		}
	case cinitCompleted:
		if *state == cinitStarted {
			*state = cinitCompleted
			d.wait.notifyLocked()
		} else {
			d.log.WithField("core", v.NCID).Warn("core init completed without being started")
		}
	default:
		d.log.WithField("state", v.State).Warn("invalid core init state requested")
	}
	v.NewState = *state
	d.mu.Unlock()
	return copyOut(r, r.Arg, v)
}

func ncModelStartedCount(r *Request, v *ioctl.NCModelStartedCount) Result {
	if res := validCore(r.Sys(), v.NCID); res != 0 {
		return res
	}
	d := r.Dev()
	d.mu.Lock()
	v.StartedCount = d.modelStarted[v.NCID]
	d.mu.Unlock()
	return copyOut(r, r.Arg, v)
}
