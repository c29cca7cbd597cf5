package chip

import (
	"time"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/chip/seq"
)

// coreLink is the chip as its cores reach it (coreChip): the memory, the
// engines, the driver's queues, allocations and counters, the trace and
// the power model.
type coreLink struct{ c *Chip }

func (l coreLink) mem() *dma.Space                                   { return l.c.mem }
func (l coreLink) engine(id int) *dma.Engine                         { return l.c.Engine(id) }
func (l coreLink) deviceDrivenQueues(nc int) [][2]int                { return l.c.drv.DeviceDrivenQueues(nc) }
func (l coreLink) allocation(pa uint64) (base, size uint64, ok bool) { return l.c.drv.Allocation(pa) }
func (l coreLink) count(nc int, name string, n uint64)               { l.c.drv.Count(nc, name, n) }
func (l coreLink) addBusy(d time.Duration)                           { l.c.power.addBusy(d) }
func (l coreLink) queueRoles() *queueRoles                           { return l.c.roles }
func (l coreLink) enginePool() *enginePool                           { return l.c.pool }
func (l coreLink) tailIncrement(eng, qid int, d dma.Dir, n uint32) error {
	return l.c.tailIncrement(eng, qid, d, n)
}

// tracer is core nc's engine e's tracer (Config.Trace, --exec-trace); a
// nil interface, not a nil pointer in one, when nothing is traced, so an
// untraced chip pays nothing.
func (l coreLink) tracer(nc int, e seq.Engine) seq.Tracer {
	if l.c.cfg.Trace == nil {
		return nil
	}
	return l.c.cfg.Trace.Engine(nc, e)
}
