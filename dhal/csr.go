package dhal

// The register space as a core's engines address it (CTRL_WR). The
// driver names each register block twice: by its BAR0 offset and by its
// device address. On V2 the two differ by one constant over the whole
// BAR0 (misc RAM, the TPB windows and the TOP_SP windows all agree on
// 0xfffc0000000), so device = CSRBase + BAR0 offset is inferred. On V3/V4
// only misc RAM (in APB_IO_0) pins the constant; that the SENG UDMA
// blocks sit at the same distance is a guess (docs/isa.md).

// CSRBase is the device address of BAR0 offset 0.
func (f *ArchFacts) CSRBase() uint64 { return f.MiscRAMDevice - f.MiscRAMBar0 }

// CSROffset maps a device address of the register space to its BAR0
// offset; ok is false outside [CSRBase, CSRBase+BAR0Size).
func (f *ArchFacts) CSROffset(addr uint64) (off uint64, ok bool) {
	base := f.CSRBase()
	if addr < base || addr-base >= f.BAR0Size {
		return 0, false
	}
	return addr - base, true
}

// UDMAQueueRegister names the queue register at BAR0 offset off: the
// engine, the queue, the side (false: M2S, true: S2M) and the register's
// offset inside the queue's block; ok is false outside every queue block.
func (f *ArchFacts) UDMAQueueRegister(off uint64) (eng, qid int, s2m bool, reg uint64, ok bool) {
	for eng, base := range f.udmaBase {
		if off < base || off >= base+UDMABlockSize {
			continue
		}
		rel := off - base
		for _, side := range []struct {
			base uint64
			s2m  bool
		}{{UDMAM2SQueues, false}, {UDMAS2MQueues, true}} {
			if rel >= side.base && rel < side.base+udmaQueueRegsSize {
				rel -= side.base
				return eng, int(rel / UDMAQueueStride), side.s2m, rel % UDMAQueueStride, true
			}
		}
		return eng, 0, false, 0, false
	}
	return 0, 0, false, 0, false
}
