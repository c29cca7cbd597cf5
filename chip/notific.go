package chip

// ProgramNQ binds notification ring [base, base+size) to slot of the
// NOTIFIC block of core id (topSP false) or TOP_SP id, as the driver
// writes base and size.
func (c *Chip) ProgramNQ(topSP bool, id, slot int, base uint64, size uint32) {
	if !topSP {
		if core := c.Core(id); core != nil {
			core.notific.Program(slot, base, size)
		}
		return
	}
	if id >= 0 && id < len(c.topSPNQ) {
		c.topSPNQ[id].Program(slot, base, size)
	}
}

// HaltNQs stops the NOTIFIC blocks of core nc and of the TOP_SPs it
// owns (per of them): they write no more records until reprogrammed.
func (c *Chip) HaltNQs(nc, per int) {
	if core := c.Core(nc); core != nil {
		core.notific.Halt()
	}
	for ts := nc * per; ts < (nc+1)*per && ts < len(c.topSPNQ); ts++ {
		c.topSPNQ[ts].Halt()
	}
}
