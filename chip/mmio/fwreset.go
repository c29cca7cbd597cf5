package mmio

import "time"

// The firmware's side of a reset: the driver writes the reset type (and,
// for a core reset, the core map) and rings the doorbell; the firmware
// accepts by clearing the request register, reports "resetting" in bit 3
// of its status register while it works, and clears it when done. A
// firmware set to fail never finishes, so the driver's wait runs out.

// Reset types the driver writes to RegResetRequest.
const (
	ResetTypeDevice = 1
	ResetTypeTPB    = 2
	// StatusResetting is the firmware status bit set during a reset.
	StatusResetting = 1 << 3
)

// ResetBehaviour sets how long a reset takes and whether it finishes.
func (f *Firmware) ResetBehaviour(duration time.Duration, fail func() bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resetDuration, f.resetFails = duration, fail
}

// startResetLocked accepts the request in RegResetRequest.
func (f *Firmware) startResetLocked() {
	f.regs[RegResetRequest/4] = 0
	f.regs[RegFirmwareStatus/4] |= StatusResetting
	f.resetGen++
	if f.resetFails != nil && f.resetFails() {
		return
	}
	gen := f.resetGen
	time.AfterFunc(f.resetDuration, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.resetGen == gen { // a newer request restarted the work
			f.regs[RegFirmwareStatus/4] &^= StatusResetting
		}
	})
}
