package device

import (
	"sync/atomic"
	"time"

	"github.com/neuronfs/neuronfs/chip"
)

// Stores through a mapping of a SEMAPHORE resource (a core's or a
// TopSP's) are not trapped: nothing tells the daemon of a store into a
// shared page of another process. So the set, increment and decrement
// windows are polled (chip.Area.Sweep), adaptively: an area is swept
// every sweepPeriod(idle), 5% of the time since a sweep last found a
// store there, between semSweepFast and semSweepInterval. Stores in
// quick succession are seen within ~50 µs; an area quiet for 100 ms
// costs what the fixed 5 ms sweep did. A wake-up costs tens of µs of CPU
// on a VM, so the rate follows the stores rather than a fixed fast
// period. A core's area is also swept before every semaphore ioctl and
// BAR0 access to it, so an ioctl read after a mapped store sees it.
// Design and measurements: docs/collectives.md.

const (
	semSweepInterval = 5 * time.Millisecond
	semSweepFast     = 50 * time.Microsecond
	sweepIdleDivisor = 20
)

// sweepPeriod is how long an area idle for idle waits for its next sweep.
func sweepPeriod(idle time.Duration) time.Duration {
	return min(max(idle/sweepIdleDivisor, semSweepFast), semSweepInterval)
}

// sweepTarget is one polled area. Times are sweepClock readings.
type sweepTarget struct {
	area chip.Area
	nc   int          // the core whose doorbell increments ring; -1 for a TopSP
	last atomic.Int64 // when a sweep last found a store
	due  int64        // the next sweep (the sweeper's own)
}

// neverStored is the last store time of an area that had none: long ago.
const neverStored = -1 << 62

// sweepClock is the sweeper's monotonic clock (ns since the system
// started), immune to wall-clock steps.
func (s *System) sweepClock() int64 { return int64(time.Since(s.epoch)) }

// initSweeps lists the device's areas: the cores' first (indexed by
// core), then the TopSPs'.
func (d *Device) initSweeps() {
	f := d.sys.Arch
	for nc := range f.CoresPerDevice {
		if a, ok := d.semArea(nc); ok {
			d.sweeps = append(d.sweeps, &sweepTarget{area: a, nc: nc})
		}
	}
	for ts := range f.TopSPsPerDevice {
		if a, ok := d.topSPSemArea(ts); ok {
			d.sweeps = append(d.sweeps, &sweepTarget{area: a, nc: -1})
		}
	}
	for _, t := range d.sweeps {
		t.last.Store(neverStored)
	}
}

// sweepSemaphores applies pending window stores of core nc; increments
// may ring the core's exec doorbell before it returns.
func (d *Device) sweepSemaphores(nc int) {
	if nc >= 0 && nc < len(d.sweeps) && d.sweeps[nc].nc == nc {
		d.sweep(d.sweeps[nc], d.sys.sweepClock(), false)
	}
}

// sweep applies t's pending stores; an async doorbell is served in a
// goroutine.
func (d *Device) sweep(t *sweepTarget, now int64, async bool) {
	found := false
	t.area.Sweep(func(op chip.Op, idx int, v uint32) {
		found = true
		if op == chip.Inc && t.nc >= 0 {
			d.onSemIncrement(t.nc, uint32(idx), v, async)
		}
	})
	if found {
		t.last.Store(now)
		d.wakeCore(t.nc)
	}
}

// semSweeper polls the areas of every open device until stop closes.
func (s *System) semSweeper(stop <-chan struct{}) {
	sleep := newSweepSleeper(s.log)
	defer sleep.close()
	for {
		select {
		case <-stop:
			return
		default:
		}
		now := s.sweepClock()
		next := now + int64(semSweepInterval)
		for _, d := range s.Devices {
			// A mapping holds its file open, and queues die with their
			// owner: a device nobody has open has nothing to sweep. Its
			// lock is taken only when one of its areas is due.
			open := -1
			for _, t := range d.sweeps {
				if now >= t.due {
					if open < 0 {
						open = d.OpenCount()
					}
					if open > 0 {
						d.sweep(t, now, true)
					}
					t.due = now + int64(sweepPeriod(time.Duration(now-t.last.Load())))
				}
				next = min(next, t.due)
			}
		}
		sleep.sleep(time.Duration(next - s.sweepClock()))
	}
}
