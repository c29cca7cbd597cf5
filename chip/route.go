package chip

import (
	"encoding/binary"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/dhal"
)

// The address decoder of a chip's engines beyond its own memory: the
// neighbour windows (dhal/route.go) lead to the spaces of the chips the
// driver names as peers (DEVICE_INFO connected_devices), a core's SoC
// windows reach the memory its mmap resources show, and the semaphore
// areas of the cores and TopSPs act on a write (SET stores, INCR adds,
// DECR subtracts) at once, whether the writing engine is this chip's or a
// neighbour's.

// initRoutes wires the decoder into the chip's space; it runs before
// any engine starts.
func (c *Chip) initRoutes() {
	f, m := c.arch, c.mem
	if f.PeerLinks() > 0 {
		m.PeerRoute = f.PeerRoute
		m.Peer = func(link int) *dma.Space {
			// Chips are all built before a process can open a device.
			if p := c.drv.Peer(link); p != nil {
				return p.mem
			}
			return nil
		}
	}
	m.SetEffects(append(c.semEffects(), c.udmaEffects()...))
	m.SetAliases(c.socAliases())
}

// socAliases send each core's TPB SoC windows (what descriptors name) to
// the memory of its mmap resources (what mappings see), where the two
// differ (V3/V4 cores 1-7): the state buffer and the semaphore area.
func (c *Chip) socAliases() []dma.Alias {
	f := c.arch
	var out []dma.Alias
	for nc := range f.CoresPerDevice {
		for _, r := range []struct {
			kind dhal.MmapResourceKind
			off  uint64 // of the resource inside the TPB window
		}{{dhal.ResourceSBUF, 0}, {dhal.ResourceSemaphore, dhal.TPBEventsOffset}} {
			res, ok := f.LookupMmapResource(dhal.BlockTPB, uint32(nc), r.kind)
			if soc := f.TPBSoCBase(nc) + r.off; ok && soc != res.Offset {
				out = append(out, dma.Alias{Range: dma.Range{Base: soc, Size: res.Size}, To: res.Offset})
			}
		}
	}
	return out
}

// semEffects are the semaphore areas as engine destinations: each
// core's and each TopSP's, at its mmap offset.
func (c *Chip) semEffects() []dma.Effect {
	f := c.arch
	var out []dma.Effect
	for _, core := range c.cores {
		if core.hasSem {
			out = append(out, dma.Effect{Range: dma.Range{Base: core.sem.Offset, Size: core.sem.Size}, Apply: core.dmaWrite})
		}
	}
	for ts := range f.TopSPsPerDevice {
		if res, ok := f.LookupMmapResource(dhal.BlockTopSP, uint32(ts), dhal.ResourceSemaphore); ok {
			out = append(out, dma.Effect{Range: dma.Range{Base: res.Offset, Size: res.Size}, Apply: func(off uint64, b []byte) {
				if a, ok := c.TopSPSemArea(ts); ok {
					applyWords(a, off, b, nil)
				}
			}})
		}
	}
	return out
}

// applyWords performs the 32-bit stores b makes at off in area a, each
// with the operation of the window it falls in; inc hears of every
// semaphore increment. Trailing bytes short of a word are dropped: the
// registers take only whole words.
func applyWords(a Area, off uint64, b []byte, inc func(idx int, v uint32)) {
	for ; len(b) >= 4 && off+4 <= uint64(len(a)); off, b = off+4, b[4:] {
		v := binary.LittleEndian.Uint32(b)
		if _, idx := a.Apply(off, OpAt(off), v); idx >= 0 && inc != nil {
			inc(idx, v)
		}
	}
}

// TopSPSemArea returns TopSP ts's semaphore area.
func (c *Chip) TopSPSemArea(ts int) (Area, bool) {
	res, found := c.arch.LookupMmapResource(dhal.BlockTopSP, uint32(ts), dhal.ResourceSemaphore)
	if !found {
		return nil, false
	}
	mem, ok := c.mem.Local(res.Offset, res.Size)
	return Area(mem), ok
}
