package fs

import "time"

// SetBudgetHook makes the slow-request log use h(op, cmd, budget) instead
// of each request's budget (op is "ioctl", "open", "flush" or "release").
func (f *FS) SetBudgetHook(h func(op string, cmd uint32, budget time.Duration) time.Duration) {
	f.watch.budgetHook.Store(&h)
}
