package device

import (
	"encoding/binary"
	"syscall"

	"github.com/neuronfs/neuronfs/chip/mmio"
)

// barScratch is one BAR_READ/BAR_WRITE's address and data arrays.
type barScratch struct{ addrs, data []byte }

// barScratch takes arrays from the device's pool (Put them back).
func (d *Device) barScratch() *barScratch {
	if s, ok := d.barBufs.Get().(*barScratch); ok {
		return s
	}
	return &barScratch{}
}

// writeBAR0 performs BAR_WRITE's stores: addrs holds count u64 register
// addresses, data count u32 values. The runtime installs microcode one
// address per word, consecutive, tens of thousands a call (wiki
// 59944145351): such a run into BAR0 memory is one copy. Any other word
// goes through the register file one by one, with the driver's checks.
// A store stops at the first bad address (EINVAL) or the first write
// the host's memory limit refuses (ENOMEM); earlier ones stay done.
func (d *Device) writeBAR0(addrs, data []byte) Result {
	count := len(data) / 4
	bar, f := d.chip.BAR0(), d.sys.Arch
	addr := func(i int) uint64 { return binary.LittleEndian.Uint64(addrs[8*i:]) }
	for i := 0; i < count; {
		j, last := i+1, addr(i)
		for ; j < count; j++ {
			a := binary.LittleEndian.Uint64(addrs[8*j : 8*j+8])
			if a != last+4 {
				break
			}
			last = a
		}
		// Both ends valid and consecutive: every word between is inside
		// BAR0 and aligned.
		first, ok1 := d.barOffset(addr(i))
		_, ok2 := d.barOffset(last)
		if ok1 && ok2 && j-i > 1 {
			done, err := bar.WriteRun(first, data[4*i:4*j])
			if err != nil {
				return Errno(syscall.ENOMEM)
			}
			if done {
				i = j
				continue
			}
		}
		for ; i < j; i++ {
			// The driver accepts an offset equal to the BAR size (it tests
			// '>'); that one is refused here too.
			off, ok := d.barOffset(addr(i))
			if !ok || f.IsBAR0WriteBlocked(off, mmio.BlockedMiscRAM) {
				return Errno(syscall.EINVAL)
			}
			if err := bar.Write32(off, binary.LittleEndian.Uint32(data[4*i:])); err != nil {
				return Errno(syscall.ENOMEM)
			}
		}
	}
	return 0
}
