package pod

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
)

// The election procedure. One goroutine runs it for the whole server,
// device by device in the same order on every server (secondaries 1..n-1,
// then the primary, device 0), so that servers proceed in lock-step and
// none waits on a device its neighbour will only reach later.

var (
	errMiswired = errors.New("pod: link miswired")
	errTimeout  = errors.New("pod: election deadline passed")
	errCanceled = errors.New("pod: election killed")
	errNeighbor = errors.New("pod: a neighbour's election failed")
)

// run waits for elections to be initiated and conducts them, retrying a
// failed one over fewer links (lame duck) before giving up.
func (e *Election) run() {
	defer close(e.finished)
	for {
		e.mu.Lock()
		for e.state != StateInProgress {
			e.mu.Unlock()
			select {
			case <-e.stopCtx.Done():
				e.mu.Lock()
				e.state = StateFailure
				e.mu.Unlock()
				return
			case <-e.wake:
			}
			e.mu.Lock()
		}
		if e.stopCtx.Err() != nil {
			e.state = StateFailure
			e.mu.Unlock()
			return
		}
		if !e.allResetLocked() {
			e.state = StateFailure
			e.mu.Unlock()
			continue
		}
		ctx, lr := e.runCtx, e.lr
		e.mu.Unlock()

		err := e.attempt(ctx, lr)

		e.mu.Lock()
		if err == nil {
			e.state = StateSuccess
			e.log.WithFields(map[string]any{"node": e.res.NodeID, "nodes": e.res.NodeCount, "serial": fmt.Sprintf("%016x", e.res.PodSerial)}).Info("ultraserver election complete")
		} else {
			switch e.lr {
			case LinkBoth:
				e.log.WithError(err).Info("retrying election as 2 node UltraServer")
				e.lr = LinkRight
			case LinkRight:
				e.lr = LinkLeft
			default:
				// Expected of a server with no pod: say it quietly.
				lvl := logrus.InfoLevel
				if e.cfg.Pod != "" {
					lvl = logrus.WarnLevel
				}
				e.log.WithError(err).Log(lvl, "ultraserver election failed")
				e.state = StateFailure
			}
			if e.state != StateFailure && time.Until(e.deadline) < e.cfg.Extension {
				e.deadline = time.Now().Add(e.cfg.Extension)
			}
		}
		e.mu.Unlock()
	}
}

// attempt runs one election over the links in lr.
func (e *Election) attempt(ctx context.Context, lr uint8) error {
	port := e.ensurePort(ctx)
	good := 0
	for dev := 1; dev < e.cfg.Devices; dev++ {
		if err := e.vetSecondary(ctx, port, dev, lr); err == nil {
			good++
		} else if e.cfg.Ctl&CtlVerbose != 0 {
			e.log.WithError(err).WithField("device", dev).Info("secondary vetting failed")
		}
	}
	return e.electPrimary(ctx, port, good, lr)
}

// ensurePort joins the pod if this server is not (or no longer) in it, and
// publishes its serial numbers. It returns nil when the server has no
// links; reads then fail.
func (e *Election) ensurePort(ctx context.Context) Port {
	e.mu.Lock()
	p := e.port
	e.mu.Unlock()
	if p != nil || e.cfg.Coordinator == nil || e.cfg.Pod == "" {
		return p
	}
	p, err := e.cfg.Coordinator.Join(ctx, Join{Pod: e.cfg.Pod, Size: e.cfg.Size, Slot: e.cfg.Slot, Serial: readSerial(e.ram, 0)})
	if err != nil {
		e.log.WithError(err).Warn("cannot join the pod")
		return nil
	}
	for dev := 0; dev < e.cfg.Devices; dev++ {
		// High word first: a neighbour takes a non-zero low word as "up"
		// and must not then read half a serial number.
		for _, off := range []uint32{RegSerialHi, RegSerialLo} {
			if err := p.Publish(ctx, dev, off, e.ram.ReadMisc(dev, off)); err != nil {
				p.Close()
				return nil
			}
		}
	}
	e.mu.Lock()
	e.port = p
	e.mu.Unlock()
	e.log.WithField("slot", p.Slot()).Info("joined the pod")
	return p
}

// dropPort forgets a port whose transport broke; the next attempt joins
// again. Link errors and cancellations leave a working port alone.
func (e *Election) dropPort(p Port, err error) {
	if p == nil || err == nil || errors.Is(err, ErrLink) {
		return
	}
	if b, ok := p.(interface{ Broken() bool }); !ok || !b.Broken() {
		return
	}
	e.mu.Lock()
	if e.port == p {
		e.port = nil
	}
	e.mu.Unlock()
	p.Close()
}

// write stores a misc-RAM register and shows it to the neighbours.
func (e *Election) write(ctx context.Context, p Port, dev int, off, v uint32) error {
	e.ram.WriteMisc(dev, off, v)
	if p == nil {
		return ErrLink
	}
	err := p.Publish(ctx, dev, off, v)
	e.dropPort(p, err)
	return err
}

// read reads a neighbour's registers. fault applies the injected link
// faults, which the driver checks in the first two phases only.
func (e *Election) read(ctx context.Context, p Port, side Side, dev int, off uint32, n int, fault bool) ([]uint32, error) {
	if fault && (side == Left && e.cfg.Ctl&CtlFaultLeftLink != 0 || side == Right && e.cfg.Ctl&CtlFaultRightLink != 0) {
		return nil, fmt.Errorf("%w: injected %s link fault", ErrLink, side)
	}
	if p == nil {
		return nil, ErrLink
	}
	rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	v, err := p.Read(rctx, side, dev, off, n)
	e.dropPort(p, err)
	return v, err
}

// pause waits one retry interval, then says why the wait must end: the
// election was killed or closed, or its deadline passed.
func (e *Election) pause(ctx context.Context) error {
	t := time.NewTimer(e.cfg.Retry)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return errCanceled
	case <-t.C:
	}
	e.mu.Lock()
	late := time.Now().After(e.deadline)
	e.mu.Unlock()
	if late {
		return errTimeout
	}
	return nil
}

func sides(lr uint8) []Side {
	var out []Side
	if lr&LinkLeft != 0 {
		out = append(out, Left)
	}
	if lr&LinkRight != 0 {
		out = append(out, Right)
	}
	return out
}

// notUp: a register value a chip that is not up (yet) reads as.
func notUp(v uint32) bool { return v == 0 || v == 0xdeadbeef }

// neighborSerials is phase 1: read each neighbour's serial over both links
// of the pair (they must agree, or the pair is cabled to two different
// servers) until every neighbour is up.
func (e *Election) neighborSerials(ctx context.Context, p Port, dev int, lr uint8) ([2]uint64, error) {
	var got [2]uint64
	for {
		done := true
		for _, s := range sides(lr) {
			if got[s] != 0 {
				continue
			}
			// The pair's two engines read the same neighbour device here.
			a, err := e.read(ctx, p, s, dev, RegSerialLo, 2, true)
			if err != nil {
				return got, err
			}
			b, err := e.read(ctx, p, s, dev, RegSerialLo, 2, true)
			if err != nil {
				return got, err
			}
			if notUp(a[0]) || notUp(b[0]) {
				done = false
				continue
			}
			if a[0] != b[0] || a[1] != b[1] {
				return got, fmt.Errorf("%w: %s link pair reads two serial numbers", errMiswired, s)
			}
			got[s] = uint64(a[1])<<32 | uint64(a[0])
		}
		if done {
			return got, nil
		}
		if err := e.pause(ctx); err != nil {
			return got, err
		}
	}
}

// neighborData is phase 2: read what each neighbour published (its two
// neighbours' serials, or a secondary's device index) once it has.
func (e *Election) neighborData(ctx context.Context, p Port, dev int, lr uint8) ([2][2]uint64, error) {
	var got [2][2]uint64
	last := 1 // the word that tells the data is there
	if lr&LinkRight != 0 {
		last = 3
	}
	have := [2]bool{}
	for {
		done := true
		for _, s := range sides(lr) {
			w, err := e.read(ctx, p, s, dev, RegLeftSerialHi, 4, true)
			if err != nil {
				return got, err
			}
			if notUp(w[last]) {
				if !have[s] {
					done = false
				}
				continue
			}
			got[s] = [2]uint64{uint64(w[0])<<32 | uint64(w[1]), uint64(w[2])<<32 | uint64(w[3])}
			have[s] = true
		}
		if done {
			return got, nil
		}
		if err := e.pause(ctx); err != nil {
			return got, err
		}
	}
}

// neighborStatus is phase 3: wait until each neighbour's status byte
// leaves INIT, then require success. The driver waits here without a
// deadline; the emulation keeps it, so a stuck neighbour cannot hang it.
func (e *Election) neighborStatus(ctx context.Context, p Port, dev int, lr uint8) error {
	var got [2]uint8
	have := [2]bool{}
	for {
		done := true
		for _, s := range sides(lr) {
			if have[s] {
				continue
			}
			w, err := e.read(ctx, p, s, dev, RegStatus, 1, false)
			if err != nil {
				return err
			}
			if st := UnpackStatus(w[0]).Sts; st != MRInit && w[0] != 0xdeadbeef {
				got[s], have[s] = st, true
				continue
			}
			done = false
		}
		if done {
			break
		}
		if err := e.pause(ctx); err != nil {
			return err
		}
	}
	for _, s := range sides(lr) {
		if got[s] != MRSuccess {
			return fmt.Errorf("%w (%s)", errNeighbor, s)
		}
	}
	return nil
}

func (e *Election) setElectionData(ctx context.Context, p Port, dev int, left, right uint64) error {
	for _, r := range []struct {
		off uint32
		v   uint32
	}{
		{RegLeftSerialHi, uint32(left >> 32)}, {RegLeftSerialLo, uint32(left)},
		{RegRightSerHi, uint32(right >> 32)}, {RegRightSerLo, uint32(right)},
	} {
		if err := e.write(ctx, p, dev, r.off, r.v); err != nil {
			return err
		}
	}
	return nil
}

// clearElectionData withdraws the published election data, so that the
// next election cannot pass phase 2 on stale data: every server must go
// through it again.
func (e *Election) clearElectionData(p Port, dev int) {
	ctx, cancel := context.WithTimeout(e.stopCtx, rpcTimeout)
	defer cancel()
	for _, off := range []uint32{RegRightSerLo, RegRightSerHi, RegLeftSerialLo, RegLeftSerialHi} {
		e.ram.WriteMisc(dev, off, 0)
		if p != nil {
			if err := p.Publish(ctx, dev, off, 0); err != nil {
				e.dropPort(p, err)
				p = nil
			}
		}
	}
}

func (e *Election) setStatus(ctx context.Context, p Port, dev int, w uint32) error {
	return e.write(ctx, p, dev, RegStatus, w)
}

func (e *Election) setPodSerial(dev int, v uint64) {
	e.ram.WriteMisc(dev, RegPodSerialHi, uint32(v>>32))
	e.ram.WriteMisc(dev, RegPodSerialLo, uint32(v))
}

// vetSecondary checks a secondary device's links: the neighbours' same
// device must be up, cabled pairwise, and publish this device's index.
func (e *Election) vetSecondary(ctx context.Context, p Port, dev int, lr uint8) (err error) {
	defer func() {
		if err == nil && e.cfg.Ctl&CtlFaultSecondaryLink != 0 {
			err = fmt.Errorf("%w: injected secondary link fault", ErrLink)
		}
		e.clearElectionData(p, dev)
		if err != nil {
			// Publishing here is best effort: the neighbours also see a dead link.
			e.write(e.stopCtx, p, dev, RegStatus, PackStatus(MRFailure, 0, 0, 0))
		}
	}()
	if err := e.setStatus(ctx, p, dev, PackStatus(MRInit, 0, 0, 0)); err != nil {
		return err
	}
	if _, err := e.neighborSerials(ctx, p, dev, lr); err != nil {
		return err
	}
	if err := e.setElectionData(ctx, p, dev, uint64(dev), uint64(dev)); err != nil {
		return err
	}
	data, err := e.neighborData(ctx, p, dev, lr)
	if err != nil {
		return err
	}
	for _, s := range sides(lr) {
		if data[s][0] != uint64(dev) {
			return fmt.Errorf("%w: %s link of device %d reaches device %d", errMiswired, s, dev, data[s][0])
		}
	}
	if err := e.setStatus(ctx, p, dev, PackStatus(MRSuccess, 0, 0, 0)); err != nil {
		return err
	}
	return e.neighborStatus(ctx, p, dev, lr)
}

// electPrimary runs the election proper on device 0 and commits its
// result, to the election state and to device 0's misc RAM.
func (e *Election) electPrimary(ctx context.Context, p Port, good int, lr uint8) (err error) {
	res := Result{NodeID: -1}
	defer func() {
		e.clearElectionData(p, 0)
		if err != nil {
			e.write(e.stopCtx, p, 0, RegStatus, PackStatus(MRFailure, 0, -1, 0))
			e.setPodSerial(0, 0)
			res = Result{NodeID: -1}
		} else {
			e.write(e.stopCtx, p, 0, RegStatus, PackStatus(MRSuccess, lr, res.NodeID, res.NodeCount))
			e.setPodSerial(0, res.PodSerial)
		}
		res.LRMask = lr
		e.mu.Lock()
		e.res = res
		e.mu.Unlock()
	}()
	self := readSerial(e.ram, 0)
	if err := e.setStatus(ctx, p, 0, PackStatus(MRInit, 0, -1, 0)); err != nil {
		return err
	}
	nb, err := e.neighborSerials(ctx, p, 0, lr)
	// The driver's fault knobs end the election here without an error:
	// it then "succeeds" with no node id and no nodes.
	if err != nil || e.cfg.Ctl&CtlFaultPrimaryLink != 0 {
		return err
	}
	if err := e.setElectionData(ctx, p, 0, nb[Left], nb[Right]); err != nil {
		return err
	}
	if e.cfg.Ctl&CtlSkipNeighborCopy != 0 {
		return nil
	}
	data, err := e.neighborData(ctx, p, 0, lr)
	if err != nil {
		return err
	}
	if lr == LinkBoth {
		// A neighbour publishing a device index is a secondary: the
		// primary's links are cabled to the wrong device.
		for _, s := range sides(lr) {
			if data[s][0] <= 15 {
				err = fmt.Errorf("%w: %s link reaches device %d", errMiswired, s, data[s][0])
			}
		}
		if err != nil {
			return err
		}
	}
	if good != e.cfg.Devices-1 {
		return fmt.Errorf("%w: only %d of %d secondaries have good links", ErrLink, good, e.cfg.Devices-1)
	}
	id, n, serial := NodeID(self, nb[Left], nb[Right], data[Left][1], lr)
	if err := e.setStatus(ctx, p, 0, PackStatus(MRSuccess, 0, -1, 0)); err != nil {
		return err
	}
	if err := e.neighborStatus(ctx, p, 0, lr); err != nil {
		return err
	}
	res = Result{NodeID: id, NodeCount: n, PodSerial: serial}
	return nil
}

// rpcTimeout bounds one exchange with the coordinator.
const rpcTimeout = 5 * time.Second
