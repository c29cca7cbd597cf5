package chip

import (
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// Stores through a mapping of a SEMAPHORE resource (a core's or a
// TopSP's) are not trapped: nothing tells the daemon of a store into a
// shared page of another process. So the set, increment and decrement
// windows are polled (Area.Sweep), adaptively: an area is swept
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
	area Area
	core *Core        // the core whose doorbell increments ring; nil for a TopSP
	last atomic.Int64 // when a sweep last found a store
	due  int64        // the next sweep (the sweeper's own)
}

// neverStored is the last store time of an area that had none: long ago.
const neverStored = -1 << 62

// sweepClock is the sweeper's monotonic clock (ns since epoch), immune
// to wall-clock steps.
func sweepClock(epoch time.Time) int64 { return int64(time.Since(epoch)) }

// initSweeps lists the chip's areas: the cores' first, then the TopSPs'.
func (c *Chip) initSweeps() {
	for _, core := range c.cores {
		if core.sweep != nil {
			c.sweeps = append(c.sweeps, core.sweep)
		}
	}
	for ts := range c.arch.TopSPsPerDevice {
		if a, ok := c.TopSPSemArea(ts); ok {
			c.sweeps = append(c.sweeps, &sweepTarget{area: a})
		}
	}
	for _, t := range c.sweeps {
		t.last.Store(neverStored)
	}
}

// Sweep applies pending window stores of the core's area; increments may
// ring its exec doorbell before it returns.
func (c *Core) Sweep() {
	if c.sweep != nil {
		c.sweep.sweep(sweepClock(c.cfg.epoch), false)
	}
}

// sweep applies t's pending stores; an async doorbell is served in a
// goroutine.
func (t *sweepTarget) sweep(now int64, async bool) {
	found := false
	t.area.Sweep(func(op Op, idx int, v uint32) {
		found = true
		if op == Inc && t.core != nil {
			t.core.onSemIncrement(uint32(idx), v, async)
		}
	})
	if found {
		t.last.Store(now)
		if t.core != nil {
			t.core.Wake()
		}
	}
}

// RunSweeper polls the areas of chips until stop closes; open(i) tells
// whether chips[i]'s device is open. A mapping holds its file open, and
// queues die with their owner: a device nobody has open has nothing to
// sweep. open is asked only when one of the chip's areas is due.
func RunSweeper(stop <-chan struct{}, log *logrus.Entry, epoch time.Time, chips []*Chip, open func(i int) bool) {
	sleep := newSweepSleeper(log)
	defer sleep.close()
	for {
		select {
		case <-stop:
			return
		default:
		}
		now := sweepClock(epoch)
		next := now + int64(semSweepInterval)
		for i, c := range chips {
			isOpen := -1
			for _, t := range c.sweeps {
				if now >= t.due {
					if isOpen < 0 {
						isOpen = 0
						if open(i) {
							isOpen = 1
						}
					}
					if isOpen > 0 {
						t.sweep(now, true)
					}
					t.due = now + int64(sweepPeriod(time.Duration(now-t.last.Load())))
				}
				next = min(next, t.due)
			}
		}
		sleep.sleep(time.Duration(next - sweepClock(epoch)))
	}
}
