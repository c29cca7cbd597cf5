package runtime

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Copy is one transfer a queue performs: Len bytes (1..64 KiB) from the
// physical address Src to Dst. Host memory is addressed by its Mem.PA.
// Meta, if set, replaces the TX descriptor's default meta_ctrl word: a
// dmadesc.ReduceMeta word combines the source into the destination.
type Copy struct {
	Src, Dst uint64
	Len      uint32
	Meta     uint32
}

// Queue is a DMA queue this process programmed with its own rings.
type Queue struct {
	dev       *Device
	Eng, QID  uint32
	TX, RX    *Mem
	size      uint32 // descriptors per ring
	next      uint32 // next free slot
	ringID    uint8  // ring id of the slot at next
	descBytes []byte
}

// InitQueue allocates two rings of descs descriptors (a multiple of 16,
// at least 32) where o says and programs queue qid of engine eng with them
// (DMA_QUEUE_INIT).
func (d *Device) InitQueue(eng, qid, descs uint32, o AllocOptions) (*Queue, error) {
	tx, err := d.Alloc(uint64(descs)*dmadesc.Size, o)
	if err != nil {
		return nil, err
	}
	rx, err := d.Alloc(uint64(descs)*dmadesc.Size, o)
	if err != nil {
		tx.Free()
		return nil, err
	}
	v := ioctl.DMAQueueInit{EngID: eng, QID: qid, TXDescCount: descs, RXDescCount: descs, TXHandle: tx.Handle, RXHandle: rx.Handle}
	if err := do(d.fd, "DMA_QUEUE_INIT", ioctl.CmdDMAQueueInit, &v); err != nil {
		tx.Free()
		rx.Free()
		return nil, err
	}
	return &Queue{dev: d, Eng: eng, QID: qid, TX: tx, RX: rx, size: descs, ringID: dmadesc.InitialRingID}, nil
}

// Descriptors builds the descriptor pairs for copies starting at the
// queue's next free slot, with the ring id each slot carries, without
// consuming the slots.
func (q *Queue) Descriptors(copies []Copy) (tx, rx []dmadesc.Desc) {
	slot, id := q.next, q.ringID
	for _, c := range copies {
		t, r := dmadesc.CopyPair(c.Src, c.Dst, c.Len, id)
		if c.Meta != 0 {
			t.Meta = c.Meta
		}
		tx, rx = append(tx, t), append(rx, r)
		if slot++; slot == q.size {
			slot, id = 0, (id+1)&3
		}
	}
	return tx, rx
}

// Submit writes the copies into both rings (DMA_COPY_DESCRIPTORS64, split
// where the ring wraps) and rings the doorbell (DMA_QUEUE_COPY_START).
// The caller keeps at most the ring size outstanding.
func (q *Queue) Submit(copies []Copy) error {
	if len(copies) == 0 || len(copies) > int(q.size) {
		return fmt.Errorf("submit %d copies on a %d-descriptor ring", len(copies), q.size)
	}
	if err := q.WriteDescriptors(q.Descriptors(copies)); err != nil {
		return err
	}
	return q.Start(uint32(len(copies)))
}

func (q *Queue) advance(n uint32) {
	q.next += n
	if q.next >= q.size {
		q.next -= q.size
		q.ringID = (q.ringID + 1) & 3
	}
}

func (q *Queue) write(ring *Mem, descs []dmadesc.Desc, queueType uint32) error {
	buf := make([]byte, len(descs)*dmadesc.Size)
	for i, d := range descs {
		d.Put(buf[i*dmadesc.Size:])
	}
	addr, unpin := pin(buf)
	defer unpin()
	v := ioctl.DMACopyDescriptors64{MemHandle: ring.Handle, Buffer: addr, NumDescs: uint32(len(descs)), Offset: uint64(q.next) * dmadesc.Size, QueueType: queueType}
	return do(q.dev.fd, "DMA_COPY_DESCRIPTORS64", ioctl.CmdDMACopyDescriptors64, &v)
}

// Start rings the doorbell for n descriptors already in both rings.
func (q *Queue) Start(n uint32) error {
	v := ioctl.DMAQueueCopyStart{EngID: q.Eng, QID: q.QID, TXDescCount: n, RXDescCount: n}
	return do(q.dev.fd, "DMA_QUEUE_COPY_START", ioctl.CmdDMAQueueCopyStart, &v)
}

// State reports both sides of the queue (DMA_QUEUE_GET_STATE).
func (q *Queue) State() (tx, rx ioctl.DMAQueueState, err error) {
	return q.dev.QueueState(q.Eng, q.QID)
}

// QueueState reports both sides of any queue (DMA_QUEUE_GET_STATE).
func (d *Device) QueueState(eng, qid uint32) (tx, rx ioctl.DMAQueueState, err error) {
	var out [2]ioctl.DMAQueueState
	b := unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), unsafe.Sizeof(out))
	addr, unpin := pin(b)
	defer unpin()
	v := ioctl.DMAQueueGetState{EngID: eng, QID: qid, TX: addr, RX: addr + uint64(unsafe.Sizeof(out[0]))}
	err = do(d.fd, "DMA_QUEUE_GET_STATE", ioctl.CmdDMAQueueGetState, &v)
	return out[0], out[1], err
}

// EngineState is DMA_ENG_GET_STATE.
func (d *Device) EngineState(eng uint32) (ioctl.DMAEngState, error) {
	var out [1]ioctl.DMAEngState
	b := unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), unsafe.Sizeof(out))
	addr, unpin := pin(b)
	defer unpin()
	v := ioctl.DMAEngGetState{EngID: eng, State: addr}
	err := do(d.fd, "DMA_ENG_GET_STATE", ioctl.CmdDMAEngGetState, &v)
	return out[0], err
}

// SetEngineState is DMA_ENG_SET_STATE (dmadesc.StateNormal, StateDisable,
// StateAbort).
func (d *Device) SetEngineState(eng uint32, s dmadesc.State) error {
	v := ioctl.DMAEngSetState{EngID: eng, State: uint32(s)}
	return do(d.fd, "DMA_ENG_SET_STATE", ioctl.CmdDMAEngSetState, &v)
}

// CompletionValue is what the driver's completion copy stores.
const CompletionValue = 0xabcdef01

// Marker is the driver's completion scheme: a last copy in a batch moves
// CompletionValue from one host word to the next, and the host polls the
// second word through its mapping.
type Marker struct {
	mem  *Mem
	view []byte
}

// NewMarker allocates and maps a marker in host memory.
func (d *Device) NewMarker() (*Marker, error) {
	m, err := d.Alloc(4096, AllocOptions{Host: true})
	if err != nil {
		return nil, err
	}
	v, err := m.Map()
	if err != nil {
		m.Free()
		return nil, err
	}
	binary.LittleEndian.PutUint32(v, CompletionValue)
	return &Marker{mem: m, view: v}, nil
}

// Copy is the transfer that signals completion; append it to a batch.
func (m *Marker) Copy() Copy { return Copy{Src: m.mem.PA, Dst: m.mem.PA + 4, Len: 4} }

func (m *Marker) word() *uint32 { return (*uint32)(unsafe.Pointer(&m.view[4])) }

// Done reports whether the completion copy has landed.
func (m *Marker) Done() bool { return atomic.LoadUint32(m.word()) == CompletionValue }

// Wait polls until the completion copy lands, then clears it for reuse.
// It spins (yielding) for the first millisecond, which covers a small
// copy, and then sleeps between polls.
func (m *Marker) Wait(ctx context.Context) error {
	if err := pollUntil(ctx, m.Done); err != nil {
		return fmt.Errorf("DMA completion marker: %w", err)
	}
	atomic.StoreUint32(m.word(), 0)
	return nil
}

// Close unmaps and frees the marker.
func (m *Marker) Close() error {
	unix.Munmap(m.view)
	return m.mem.Free()
}

// WriteDescriptors writes descriptor pairs at the queue's next free slots
// (DMA_COPY_DESCRIPTORS64, split where the ring wraps) without ringing
// the doorbell: for a queue the device rings itself (the exec queue).
func (q *Queue) WriteDescriptors(tx, rx []dmadesc.Desc) error {
	if len(tx) != len(rx) || len(tx) > int(q.size) {
		return fmt.Errorf("write %d/%d descriptors on a %d-descriptor ring", len(tx), len(rx), q.size)
	}
	for start := 0; start < len(tx); {
		n := min(len(tx)-start, int(q.size-q.next))
		if err := q.write(q.TX, tx[start:start+n], 0); err != nil {
			return err
		}
		if err := q.write(q.RX, rx[start:start+n], 1); err != nil {
			return err
		}
		q.advance(uint32(n))
		start += n
	}
	return nil
}
