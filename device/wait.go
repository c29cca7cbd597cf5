package device

import (
	"context"
	"syscall"
	"time"
)

// notifyLocked wakes every waiter of the device; call it, with d.mu held,
// after any change a waiter may be waiting for.
func (d *Device) notifyLocked() {
	if d.changed != nil {
		close(d.changed)
	}
	d.changed = make(chan struct{})
}

// waitLocked waits, with d.mu held on entry and on return but released
// while sleeping, until ready() holds. It gives up with EBUSY after budget
// and EINTR when the caller is interrupted (a FUSE interrupt cancels ctx).
func (d *Device) waitLocked(ctx context.Context, budget time.Duration, ready func() bool) syscall.Errno {
	if ready() {
		return 0
	}
	deadline := time.NewTimer(budget)
	defer deadline.Stop()
	for !ready() {
		if d.changed == nil {
			d.changed = make(chan struct{})
		}
		ch := d.changed
		d.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			d.mu.Lock()
			return syscall.EBUSY
		case <-ctx.Done():
			d.mu.Lock()
			return syscall.EINTR
		}
		d.mu.Lock()
	}
	return 0
}

// sleepLocked waits, with d.mu released meanwhile, for the next change of
// the device or for the caller's interruption. It reports false when it
// returned because the caller was interrupted (then it also paces itself,
// since an interrupted context stays done).
func (d *Device) sleepLocked(ctx context.Context) bool {
	if d.changed == nil {
		d.changed = make(chan struct{})
	}
	ch := d.changed
	d.mu.Unlock()
	defer d.mu.Lock()
	if ctx.Err() != nil {
		select {
		case <-ch:
			return true
		case <-time.After(10 * time.Millisecond):
			return false
		}
	}
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}
