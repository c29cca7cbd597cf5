package device

import (
	"context"

	"github.com/sirupsen/logrus"
)

// Orphaned runs. A staged program that loops forever keeps its engines
// busy on the host's CPU. Once the last attached process leaves the
// device, nobody can ring a core, read its queues or reset it (a mapping
// that outlives its fd belongs to a process the driver released), so
// every core's run is ended as a core reset ends it, and waited for
// before the process's memory, which the engines fetch from, is freed. An
// emulator's choice (docs/isa.md): the hardware's engines would go on
// until the next reset.

// stopRunsWait bounds the wait for the engines: each stops at its next
// yield, microseconds away; past it the flush goes on and says so.
const stopRunsWait = defaultBudget

// lastAttachedLocked reports whether tgid is the only attached process.
func (d *Device) lastAttachedLocked(tgid int32) bool {
	ts := d.procs.tgids()
	return len(ts) == 1 && ts[0] == tgid
}

// stopOrphanRunsLocked ends every core's staged run and waits for the
// engines, within the flush's budget; d.mu is released while it waits.
func (d *Device) stopOrphanRunsLocked(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopRunsWait)
	defer cancel()
	d.mu.Unlock()
	defer d.mu.Lock()
	for nc := 0; nc < d.sys.Arch.CoresPerDevice; nc++ {
		if err := d.chip.Core(nc).StopRuns(ctx); err != nil {
			d.log.WithError(err).Warn("last process gone: a core's engines did not stop")
		}
	}
	d.log.WithFields(logrus.Fields{"cores": d.sys.Arch.CoresPerDevice}).Debug("last process gone: staged runs stopped")
}
