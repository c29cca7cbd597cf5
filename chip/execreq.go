package chip

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/dma"
)

// Delivered exec requests. For each execution the runtime appends to its
// exec queue a copy of the 52-byte device_exec_request_t (the device
// address of every engine's image) and then a 4-byte copy into an event
// word of the core (the request-load poke). Where the 52 bytes land (a
// slot of the sequencer's memory) and which event is poked are not known,
// so a request is recognised by that shape alone, on any queue of any
// engine: a 52-byte copy immediately followed, on the same queue, by a
// 4-byte copy into a core's event window. The core keeps the latest such
// request until a doorbell takes it (execrun.go). Layout: docs/isa.md.

const (
	execRequestSize = 52
	execPokeSize    = 4
	// device_exec_request_t: u32 do_model_switch, eng_addresses_lo[5],
	// eng_addresses_hi[5], reload_seq_config, load_act_dve_tables.
	execReqAddrLo = 0x04
	execReqAddrHi = 0x18
)

// execRequest is one delivered device_exec_request_t.
type execRequest struct {
	addr [seq.NumEngines]uint64 // each engine's image; 0: no program
}

func decodeExecRequest(b []byte) *execRequest {
	r := &execRequest{}
	for e := range r.addr {
		lo := binary.LittleEndian.Uint32(b[execReqAddrLo+4*e:])
		hi := binary.LittleEndian.Uint32(b[execReqAddrHi+4*e:])
		r.addr[e] = uint64(hi)<<32 | uint64(lo)
	}
	return r
}

// execWatch is the device's watch over its DMA queues. It takes no lock:
// a queue's steps are reported in order by the one worker that runs it,
// and each slot is a single atomic word.
type execWatch struct {
	queues  []atomic.Pointer[execRequest]         // by engine*QueuesPerEngine+queue: a 52-byte copy just seen
	pending [MaxCores]atomic.Pointer[execRequest] // by core: delivered, not yet taken by a doorbell
	events  [MaxCores][]dma.Range                 // by core: the event window, at its mmap and SoC addresses
}

// initExecWatch sizes the watch; it runs before any engine starts.
func (c *Chip) initExecWatch() {
	f := c.arch
	w := &c.execReq
	w.queues = make([]atomic.Pointer[execRequest], f.DMAEnginesPerDevice*dma.QueuesPerEngine)
	for nc := range min(f.CoresPerDevice, MaxCores) {
		if res, ok := f.LookupMmapResource(dhal.BlockTPB, uint32(nc), dhal.ResourceSemaphore); ok {
			w.events[nc] = append(w.events[nc], dma.Range{Base: res.Offset, Size: ReadWindow})
		}
		if soc := f.TPBSoCBase(nc); soc != dhal.InvalidOffset {
			w.events[nc] = append(w.events[nc], dma.Range{Base: soc + dhal.TPBEventsOffset, Size: ReadWindow})
		}
	}
}

// observeCopy is every engine's dma.Options.OnCopy.
func (c *Chip) observeCopy(eng, qid int, _, dst, n uint64) {
	w := &c.execReq
	i := eng*dma.QueuesPerEngine + qid
	if i >= len(w.queues) {
		return
	}
	slot := &w.queues[i]
	switch n {
	case execRequestSize:
		if b, ok := c.mem.Slice(dst, execRequestSize); ok {
			slot.Store(decodeExecRequest(b))
			return
		}
	case execPokeSize:
		if req := slot.Load(); req != nil {
			slot.Store(nil)
			for nc := range w.events {
				for _, r := range w.events[nc] {
					if r.Contains(dst, n) {
						w.pending[nc].Store(req)
						return
					}
				}
			}
			return
		}
	}
	if slot.Load() != nil {
		slot.Store(nil) // something else came between: not a request
	}
}

// takeExecRequest returns core nc's delivered request, once.
func (c *Chip) takeExecRequest(nc int) *execRequest {
	if nc >= MaxCores {
		return nil
	}
	return c.execReq.pending[nc].Swap(nil)
}
