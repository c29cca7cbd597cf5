package device

import (
	"context"
	"time"

	"github.com/neuronfs/neuronfs/chip/mmio"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
)

// The reset engine: requests queue per device and one worker serves them
// in FIFO order, coalescing whatever is pending into one reset, as the
// driver's "nd%d reset" kthread does.

const (
	// ncMapDevice selects the whole device.
	ncMapDevice uint32 = 0xffffffff
	// resetRequestAll is the driver's own request id (probe, sysfs reset):
	// waiters poll the device state instead of reaping a completion.
	resetRequestAll uint32 = 0xffffffff
)

type resetState int

const (
	resetStarted resetState = iota
	resetCompleted
	resetFailed
)

type resetRequest struct {
	id    uint32
	ncMap uint32
	state resetState
}

// resetEngine is a device's queue of pending and completed-but-unreaped
// requests and the worker that serves them. Its queues live under the
// device lock (d.mu); a reset reaches back to the owning device for the
// per-core state it clears and the device state it sets.
type resetEngine struct {
	d         *Device
	pending   []*resetRequest
	completed []*resetRequest
	work      chan struct{} // wakes the worker
	stop      chan struct{}
	// hardwareResets counts resets performed (after coalescing).
	hardwareResets int
	lastFailed     bool // the last of them failed (state.go)
}

// run sets up the queue and starts the worker, at probe.
func (e *resetEngine) run(d *Device) {
	e.d = d
	e.work = make(chan struct{}, 1)
	e.stop = make(chan struct{})
	go e.worker()
}

func (e *resetEngine) find(id uint32) *resetRequest {
	for _, q := range [][]*resetRequest{e.pending, e.completed} {
		for _, r := range q {
			if r.id == id {
				return r
			}
		}
	}
	return nil
}

// startLocked queues a reset of the cores in ncMap, doing at once
// what the driver does at queueing time. It returns 1, as the driver does,
// if a request with this id is already pending or unreaped.
func (e *resetEngine) startLocked(ncMap, id uint32) Result {
	d := e.d
	if e.find(id) != nil {
		d.log.WithField("request", id).Warn("reset request already pending")
		return 1
	}
	if id == resetRequestAll {
		d.state = StateReset
	}
	for c := 0; c < maxCoreSlots; c++ {
		if ncMap == ncMapDevice || ncMap&(1<<c) != 0 {
			d.cinit[c] = cinitInvalid
			d.modelStarted[c] = 0
			d.nq.destroyLocked(c)
			if c < d.sys.Arch.CoresPerDevice {
				d.h2t.releaseCoreLocked(c)
				d.chip.Core(c).ResetExec()
			}
			if c < d.sys.Arch.CoresPerDevice {
				d.metrics.Add(c, "other_info/reset_req_count", 1)
			}
		}
	}
	e.pending = append(e.pending, &resetRequest{id: id, ncMap: ncMap})
	d.wait.notifyLocked()
	select {
	case e.work <- struct{}{}:
	default:
	}
	return 0
}

// worker serves the queue until the device closes.
func (e *resetEngine) worker() {
	for {
		select {
		case <-e.stop:
			return
		case <-e.work:
		}
		for e.serve() {
		}
	}
}

// serve takes what is pending, resets, and records the outcome. It
// reports whether it did anything.
func (e *resetEngine) serve() bool {
	d := e.d
	d.mu.Lock()
	if len(e.pending) == 0 {
		d.mu.Unlock()
		return false
	}
	// The driver's own request is served alone; user requests are merged.
	batch := e.pending
	if batch[0].id == resetRequestAll {
		batch = batch[:1]
	}
	var ncMap uint32
	for _, r := range batch {
		ncMap |= r.ncMap
	}
	d.mu.Unlock()

	ok := d.sys.hardwareReset(d, ncMap)
	if ok {
		d.dma.reinit(ncMap)
	}
	d.mu.Lock()
	e.hardwareResets++
	e.lastFailed = !ok
	d.mu.Unlock()

	if ncMap == ncMapDevice {
		// Runs after the unlock below: the driver's post-reset
		// configuration (pod election) follows whole-device resets only.
		defer d.sys.postReset(d, ok)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	e.pending = e.pending[len(batch):]
	state := resetCompleted
	if !ok {
		state = resetFailed
		// The driver counts a failure on every active core, whichever
		// cores the reset was for.
		for c := 0; c < d.sys.Arch.CoresPerDevice; c++ {
			if d.sys.Arch.ActiveCoreMap&(1<<c) != 0 {
				d.metrics.Add(c, "other_info/reset_fail_count", 1)
			}
		}
	}
	if batch[0].id == resetRequestAll {
		d.state = StateReady
		if !ok {
			d.state = StateInvalid
		}
	} else {
		for _, r := range batch {
			r.state = state
		}
		e.completed = append(e.completed, batch...)
	}
	d.wait.notifyLocked()
	return true
}

// hardwareReset is the driver's reset of the cores in ncMap through the
// firmware: write the core map and the reset type, ring the doorbell,
// poll until the firmware takes the request (re-issuing it now and then,
// giving up after the arch's limit), then read the firmware status a few
// times for the end of the reset. Every interval is scaled by the
// system's time scale. It reports success.
func (s *System) hardwareReset(d *Device, ncMap uint32) bool {
	f := s.Arch
	bar, misc := d.chip.BAR0(), f.MiscRAMBar0
	resetType, reissue := uint32(mmio.ResetTypeDevice), dhal.ResetReissueDevice
	if ncMap != ncMapDevice {
		resetType, reissue = mmio.ResetTypeTPB, dhal.ResetReissueTPB
		bar.Write32(misc+mmio.RegTPBResetMap, f.ResetTPBMap(ncMap))
	}
	initiate := func() {
		bar.Write32(misc+mmio.RegResetRequest, resetType)
		bar.Write32(misc+mmio.RegDoorbell, 1)
	}
	initiate()
	start, lastIssue := time.Now(), time.Now()
	for bar.Read32(misc+mmio.RegResetRequest) != 0 {
		if time.Since(start) > s.scaled(f.ResetInitiateMaxWait) {
			return false
		}
		if !d.reset.sleep(s.scaled(dhal.ResetInitiatePoll)) {
			return false
		}
		if time.Since(lastIssue) > s.scaled(reissue) {
			initiate()
			lastIssue = time.Now()
		}
	}
	// The driver reads the status five times, sleeping 0, 1, 2, 3 and 4
	// steps before the reads. Scaled down, that budget shrinks below the
	// daemon's scheduling noise: keep reading, at the last interval, until
	// at least minResetWait has passed.
	waitStart := time.Now()
	for i := 0; ; i++ {
		step := min(i, dhal.ResetCompletionReads-1)
		if !d.reset.sleep(s.scaled(time.Duration(step) * dhal.ResetCompletionSleepsStep)) {
			return false
		}
		if bar.Read32(misc+mmio.RegFirmwareStatus)&mmio.StatusResetting == 0 {
			return true
		}
		if i >= dhal.ResetCompletionReads-1 && time.Since(waitStart) >= minResetWait {
			return false
		}
	}
}

// minResetWait is the least the emulated driver waits for the firmware to
// finish a reset, whatever the time scale.
const minResetWait = 500 * time.Millisecond

// sleep sleeps unless the device is closing (false).
func (e *resetEngine) sleep(t time.Duration) bool {
	if t <= 0 {
		return true
	}
	select {
	case <-time.After(t):
		return true
	case <-e.stop:
		return false
	}
}

// waitLocked waits for request id and reaps it: 0 completed, 1 failed
// or unknown (0 when unknown and check is set), -EINTR when the caller is
// being terminated. Like the driver, only SIGTERM or SIGKILL end the wait;
// d.mu is released while it waits.
func (e *resetEngine) waitLocked(ctx context.Context, fatal func() bool, id uint32, check bool) int32 {
	d := e.d
	req := e.find(id)
	if req == nil {
		if check {
			return 0
		}
		return 1
	}
	if errno := d.wait.waitFatalLocked(ctx, fatal, func() bool { return req.state != resetStarted }); errno != 0 {
		return -int32(errno)
	}
	for i, r := range e.completed {
		if r == req {
			e.completed = append(e.completed[:i], e.completed[i+1:]...)
			break
		}
	}
	if req.state == resetCompleted {
		return 0
	}
	return 1
}

func ncReset(r *Request, v *ioctl.DeviceReset) Result {
	d := r.Dev()
	v.RequestID = uint32(r.Caller.Tgid)
	d.mu.Lock()
	res := d.reset.startLocked(v.NCMap, v.RequestID)
	d.mu.Unlock()
	if res != 0 {
		return res
	}
	return copyOut(r, r.Arg, v)
}

func ncResetReady(r *Request, v *ioctl.DeviceReady) Result {
	d := r.Dev()
	d.mu.Lock()
	v.Result = d.reset.waitLocked(r.Ctx, r.Caller.fatal, v.RequestID, false)
	d.mu.Unlock()
	return copyOut(r, r.Arg, v)
}

// deviceResetDeprecated queues a whole-device reset for the caller and
// always returns 0.
func deviceResetDeprecated(r *Request) Result {
	d := r.Dev()
	d.mu.Lock()
	d.reset.startLocked(ncMapDevice, uint32(r.Caller.Tgid))
	d.mu.Unlock()
	return 0
}

// deviceReadyDeprecated writes 1 when the caller's reset completed (or it
// has none) and 0 otherwise.
func deviceReadyDeprecated(r *Request) Result {
	d := r.Dev()
	d.mu.Lock()
	res := d.reset.waitLocked(r.Ctx, r.Caller.fatal, uint32(r.Caller.Tgid), true)
	d.mu.Unlock()
	var ok uint8
	if res == 0 {
		ok = 1
	}
	return copyOut(r, r.Arg, &ok)
}
