package chip

import "github.com/neuronfs/neuronfs/chip/seq"

// The execution trace's hooks (Config.Trace, --exec-trace): without a
// trace the sequencers get no tracer and the engines the bare copy
// observer, so an untraced chip pays nothing.

// engineTracer is core nc's engine e's tracer; a nil interface, not a nil
// pointer in one, when nothing is traced.
func (c *Chip) engineTracer(nc int, e seq.Engine) seq.Tracer {
	if c.cfg.Trace == nil {
		return nil
	}
	return c.cfg.Trace.Engine(nc, e)
}

// copyObserver is the engines' OnCopy: the exec-request watch, and the
// trace's DMA tracks when tracing.
func (c *Chip) copyObserver() func(eng, qid int, src, dst, n uint64) {
	t := c.cfg.Trace
	if t == nil {
		return c.observeCopy
	}
	return func(eng, qid int, src, dst, n uint64) {
		c.observeCopy(eng, qid, src, dst, n)
		t.Copy(eng, qid, src, dst, n)
	}
}
