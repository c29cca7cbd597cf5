package chip

import "github.com/neuronfs/neuronfs/chip/seq"

// EngineReport is one sequencer's state and counts.
type EngineReport struct {
	Status seq.Status
	Counts seq.Counts
}

// EngineReports snapshots core nc's current (or last) staged run; nil
// when none ran.
func (c *Chip) EngineReports(nc int) []EngineReport {
	if nc < 0 || nc >= MaxCores {
		return nil
	}
	cr := &c.progs.cores[nc]
	cr.mu.Lock()
	r := cr.cur
	cr.mu.Unlock()
	if r == nil {
		return nil
	}
	var out []EngineReport
	for _, sq := range r.seqs {
		if sq != nil {
			out = append(out, EngineReport{sq.Status(), sq.Counts()})
		}
	}
	return out
}

// EngineStatus reports core nc's engines as its last staged run left
// them; empty when none ran.
func (c *Chip) EngineStatus(nc int) []seq.Status {
	var out []seq.Status
	for _, e := range c.EngineReports(nc) {
		out = append(out, e.Status)
	}
	return out
}
