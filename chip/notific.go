package chip

import "github.com/neuronfs/neuronfs/nq"

// ProgramNQ binds notification ring [base, base+size) to slot of the
// NOTIFIC block of core id (topSP false) or TOP_SP id, as the driver
// writes base and size.
func (c *Chip) ProgramNQ(topSP bool, id, slot int, base uint64, size uint32) {
	blocks := c.coreNQ
	if topSP {
		blocks = c.topSPNQ
	}
	if id >= 0 && id < len(blocks) {
		blocks[id].Program(slot, base, size)
	}
}

// HaltNQs stops the NOTIFIC blocks of core nc and of the TOP_SPs it
// owns (per of them): they write no more records until reprogrammed.
func (c *Chip) HaltNQs(nc, per int) {
	if nc < len(c.coreNQ) {
		c.coreNQ[nc].Halt()
	}
	for ts := nc * per; ts < (nc+1)*per && ts < len(c.topSPNQ); ts++ {
		c.topSPNQ[ts].Halt()
	}
}

// NQSlots reports the bound slots of core nc's NOTIFIC block (for the
// state control file); nil for a core the chip does not have.
func (c *Chip) NQSlots(nc int) []nq.SlotState {
	if nc < 0 || nc >= len(c.coreNQ) || c.coreNQ[nc] == nil {
		return nil
	}
	return c.coreNQ[nc].Slots()
}
