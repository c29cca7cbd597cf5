package device

import (
	"context"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/device/mempool"
)

// The process table: the driver's attach slots, one record per process
// (tgid) that has the device open. What a process holds on the device (its
// DMA queues, core locks, datastore slot, memory, a reset it asked for) is
// found from its tgid and released in one place, releaseProcessLocked,
// whichever way the process goes: its last flush, or its death noticed by
// the system's process watch (a process can die without the flush reaching
// the device, e.g. when the descriptor it was opened for was never
// installed).

// process is one attach slot.
type process struct {
	tgid  int32
	count int // opens minus flushes by this tgid (the driver's open_count)
}

type processTable [MaxProcessesPerDevice]process

// find returns tgid's slot, or nil.
func (t *processTable) find(tgid int32) *process {
	for i := range t {
		if t[i].count > 0 && t[i].tgid == tgid {
			return &t[i]
		}
	}
	return nil
}

// attach counts one more open by tgid, taking a free slot on the first;
// it fails when all slots are taken.
func (t *processTable) attach(tgid int32) bool {
	if p := t.find(tgid); p != nil {
		p.count++
		return true
	}
	for i := range t {
		if t[i].count == 0 {
			t[i] = process{tgid: tgid, count: 1}
			return true
		}
	}
	return false
}

// tgids lists the attached processes in slot order.
func (t *processTable) tgids() []int32 {
	var out []int32
	for _, p := range t {
		if p.count > 0 {
			out = append(out, p.tgid)
		}
	}
	return out
}

// detach is the driver's flush of a normal fd by caller: one open fewer,
// and when it was the process's last, everything the process holds goes.
// A process that died (gone) loses its slot whatever its count. It
// reports whether the process left the device.
func (d *Device) detach(ctx context.Context, caller Caller, gone bool) bool {
	tgid := caller.Tgid
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.procs.find(tgid)
	if p == nil {
		return false
	}
	if !gone && p.count > 1 {
		p.count--
		return false
	}
	// The driver first lets a reset the process asked for finish. The
	// wait releases the lock: look the slot up again afterwards.
	d.reset.waitLocked(ctx, caller.fatal, uint32(tgid), true)
	if p = d.procs.find(tgid); p == nil {
		return false // the death watch released it meanwhile
	}
	if !gone && p.count > 1 {
		p.count-- // the process opened the device again meanwhile
		return false
	}
	if d.lastAttachedLocked(tgid) {
		// Nobody will be left to ring the cores: their runs end before the
		// memory they fetch from goes. The wait releases the lock.
		d.stopOrphanRunsLocked(ctx)
		if p = d.procs.find(tgid); p == nil {
			return false
		}
		if !gone && p.count > 1 {
			p.count--
			return false
		}
	}
	d.releaseProcessLocked(tgid)
	*p = process{}
	d.wait.notifyLocked()
	d.log.WithFields(logrus.Fields{"tgid": tgid, "exited": gone}).Debug("process detached")
	return true
}

// releaseProcessLocked frees what tgid holds on the device, in the
// driver's order: its DMA queues go back to the dummy ring, its core
// locks are dropped, its datastore slot is aggregated and cleared, and
// its process-lifespan memory is freed.
func (d *Device) releaseProcessLocked(tgid int32) {
	d.dma.releaseQueuesLocked(tgid)
	d.crwl.releaseLocked(tgid)
	d.wait.notifyLocked()
	if s := d.ds.findLocked(tgid); s != nil {
		d.ds.releaseLocked(s)
	}
	for _, c := range d.mem.pool.FreeExpired(mempool.LifespanCurProcess, tgid) {
		d.mem.discard(c)
	}
}
