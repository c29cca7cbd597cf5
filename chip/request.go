package chip

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/chip/seq"
)

// Delivered exec requests. For each execution the runtime appends to its
// exec queue a copy of the 52-byte device_exec_request_t (the device
// address of every engine's image) and then a 4-byte copy into an event
// word of the core (the request-load poke). Where the 52 bytes land (a
// slot of the sequencer's memory) and which event is poked are not known,
// so a request is recognised by that shape alone, on any queue of any
// engine: a 52-byte copy immediately followed, on the same queue, by a
// 4-byte copy into a core's event window. The core keeps the latest such
// request until a doorbell takes it (run.go). Layout: docs/isa.md.

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

// requestWatch is the chip's watch over its DMA queues for requests. It
// takes no lock: a queue's steps are reported in order by the one worker
// that runs it, and each slot is a single atomic word.
type requestWatch struct {
	mem    func() *dma.Space
	queues []atomic.Pointer[execRequest] // by engine*QueuesPerEngine+queue: a 52-byte copy just seen
	cores  []*Core
}

func newRequestWatch(mem func() *dma.Space, engines int, cores []*Core) *requestWatch {
	return &requestWatch{mem: mem, queues: make([]atomic.Pointer[execRequest], engines*dma.QueuesPerEngine), cores: cores}
}

// observe is every engine's dma.Options.OnCopy.
func (w *requestWatch) observe(eng, qid int, _, dst, n uint64) {
	i := eng*dma.QueuesPerEngine + qid
	if i >= len(w.queues) {
		return
	}
	slot := &w.queues[i]
	switch n {
	case execRequestSize:
		if b, ok := w.mem().Slice(dst, execRequestSize); ok {
			slot.Store(decodeExecRequest(b))
			return
		}
	case execPokeSize:
		if req := slot.Load(); req != nil {
			slot.Store(nil)
			for _, c := range w.cores {
				if c.poked(dst, n) {
					c.learnExecQueue(eng, qid)
					c.request.Store(req)
					return
				}
			}
			return
		}
	}
	if slot.Load() != nil {
		slot.Store(nil) // something else came between: not a request
	}
}

// copyObserver is the engines' OnCopy: the request watch, and the
// trace's DMA tracks when tracing (an untraced chip pays nothing more).
func (w *requestWatch) copyObserver(cfg Config) func(eng, qid int, src, dst, n uint64) {
	t := cfg.Trace
	if t == nil {
		return w.observe
	}
	return func(eng, qid int, src, dst, n uint64) {
		w.observe(eng, qid, src, dst, n)
		t.Copy(eng, qid, src, dst, n)
	}
}

// poked reports whether a copy of n bytes at dst lands in the core's
// event window.
func (c *Core) poked(dst, n uint64) bool {
	for _, r := range c.events {
		if r.Contains(dst, n) {
			return true
		}
	}
	return false
}

// takeRequest returns the core's delivered request, once.
func (c *Core) takeRequest() *execRequest { return c.request.Swap(nil) }
