package runtime

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Typed wrappers for the commands a runtime uses beyond memory, DMA and
// notification queues; every other command is reachable through Call.

// SemaphoreRead returns core nc's semaphore idx.
func (d *Device) SemaphoreRead(nc, idx uint32) (uint32, error) {
	v := ioctl.Semaphore{NCID: nc, SemaphoreIndex: idx}
	err := Call(d, ioctl.CmdSemaphoreRead, &v)
	return v.Value, err
}

// SemaphoreWrite sets core nc's semaphore idx.
func (d *Device) SemaphoreWrite(nc, idx, value uint32) error {
	v := ioctl.Semaphore{NCID: nc, SemaphoreIndex: idx, Value: value}
	return Call(d, ioctl.CmdSemaphoreWrite, &v)
}

// SemaphoreDecrement subtracts value from core nc's semaphore idx.
func (d *Device) SemaphoreDecrement(nc, idx, value uint32) error {
	v := ioctl.Semaphore{NCID: nc, SemaphoreIndex: idx, Value: value}
	return Call(d, ioctl.CmdSemaphoreDecrement, &v)
}

// EventGet returns core nc's event idx.
func (d *Device) EventGet(nc, idx uint32) (uint32, error) {
	v := ioctl.Event{NCID: nc, EventIndex: idx}
	err := Call(d, ioctl.CmdEventGet, &v)
	return v.Value, err
}

// EventSet sets core nc's event idx.
func (d *Device) EventSet(nc, idx, value uint32) error {
	v := ioctl.Event{NCID: nc, EventIndex: idx, Value: value}
	return Call(d, ioctl.CmdEventSet, &v)
}

// ProgramEngine copies code into a device address the architecture lets
// engines be programmed at (PROGRAM_ENGINE_NC64).
func (d *Device) ProgramEngine(nc uint32, dst uint64, code []byte) error {
	addr, unpin := pin(code)
	defer unpin()
	v := ioctl.ProgramEngineNC64{NCID: nc, Dst: dst, Buffer: addr, Size: uint64(len(code))}
	return Call(d, ioctl.CmdProgramEngineNC64, &v)
}

// CopyAsync starts a chunk-to-chunk copy on the core's h2t queue and
// waits for the copy of context prev (-1: none); it returns the context
// to wait on later (MEM_COPY_ASYNC64).
func (m *Mem) CopyAsync(dstOff uint64, src *Mem, srcOff, size uint64, prev int32) (int32, error) {
	v := ioctl.MemCopyAsync64{SrcMemHandle: src.Handle, DstMemHandle: m.Handle, Size: size, SrcOffset: srcOff, DstOffset: dstOff, PwaitHandle: uint32(prev)}
	err := Call(m.dev, ioctl.CmdMemCopyAsync64, &v)
	return int32(v.WaitHandle), err
}

// WaitCopy waits for an asynchronous copy's context (MEM_COPY_ASYNC_WAIT).
func (m *Mem) WaitCopy(src *Mem, ctx int32) error {
	v := ioctl.MemCopyAsyncWait{SrcMemHandle: src.Handle, DstMemHandle: m.Handle, PwaitHandle: uint32(ctx)}
	return Call(m.dev, ioctl.CmdMemCopyAsyncWait, &v)
}

// ModelStartedCount returns core nc's model-started counter.
func (d *Device) ModelStartedCount(nc uint32) (uint64, error) {
	v := ioctl.NCModelStartedCount{NCID: nc}
	err := Call(d, ioctl.CmdNCModelStartedCount, &v)
	return v.StartedCount, err
}

// PodInfo is POD_INFO.
func (d *Device) PodInfo() (ioctl.PodInfo, error) {
	v := ioctl.PodInfo{Sz: uint16(ioctl.Sizeof[ioctl.PodInfo]())}
	err := Call(d, ioctl.CmdPodInfo, &v)
	return v, err
}

// PodStatus is POD_STATUS_V2.
func (d *Device) PodStatus() (ioctl.PodStatusV2, error) {
	var v ioctl.PodStatusV2
	v.V1.Sz = uint16(ioctl.Sizeof[ioctl.PodStatusV2]())
	err := Call(d, ioctl.CmdPodStatusV2, &v)
	return v, err
}

// MetricsCtrl pauses (1) or resumes (0) the driver's periodic metrics.
func (d *Device) MetricsCtrl(mode uint32) error {
	v := ioctl.MetricsCtrl{Mode: mode}
	return Call(d, ioctl.CmdMetricsCtrl, &v)
}

// PostMetric sends a metrics blob (at most 128 bytes) to the firmware.
func (d *Device) PostMetric(blob []byte) error {
	addr, unpin := pin(blob)
	defer unpin()
	v := ioctl.PostMetric{Data: addr, DataSize: uint32(len(blob))}
	return Call(d, ioctl.CmdPostMetric, &v)
}

// ReadHWCounters asks the firmware for the values at device addresses.
func (d *Device) ReadHWCounters(addrs []uint64) ([]uint32, error) {
	if len(addrs) == 0 {
		return nil, nil
	}
	a := make([]byte, 8*len(addrs))
	for i, x := range addrs {
		binary.LittleEndian.PutUint64(a[8*i:], x)
	}
	out := make([]byte, 4*len(addrs))
	pa, unpinA := pin(a)
	defer unpinA()
	po, unpinO := pin(out)
	defer unpinO()
	v := ioctl.ReadHWCounters{Address: pa, Data: po, Count: uint32(len(addrs))}
	if err := Call(d, ioctl.CmdReadHWCounters, &v); err != nil {
		return nil, err
	}
	vals := make([]uint32, len(addrs))
	for i := range vals {
		vals[i] = binary.LittleEndian.Uint32(out[4*i:])
	}
	return vals, nil
}

// SetPowerProfile selects the chip's power profile (POWER_PROFILE).
func (d *Device) SetPowerProfile(profile uint32) error {
	v := ioctl.PowerProfile{Sz: uint16(ioctl.Sizeof[ioctl.PowerProfile]()), Profile: profile}
	return Call(d, ioctl.CmdPowerProfile, &v)
}

// ResourceMmapInfo returns where a special resource (semaphores, SBUF, a
// TOP_SP window, an HBM stack) is mapped and its exact length.
func (d *Device) ResourceMmapInfo(block, id, resource uint32) (offset, size uint64, err error) {
	v := ioctl.ResourceMmapInfo{Block: block, BlockID: id, Resource: resource}
	err = Call(d, ioctl.CmdResourceMmapInfo, &v)
	return v.Offset, v.Size, err
}

// CRWL takes or leaves core nc's model lock: cmd is one of the CRWL
// reader/writer commands.
func (d *Device) CRWL(cmd, nc uint32, model [32]byte) error {
	v := ioctl.CRWL{NCID: nc, UUID: ioctl.UUID{Value: model}}
	return Call(d, cmd, &v)
}

// MapResource maps a special resource (a core's semaphore area, its state
// buffer, a TOP_SP window, an HBM stack) at the offset and length the
// driver gives for it. Unmap it with unix.Munmap.
func (d *Device) MapResource(block, id, resource uint32) ([]byte, error) {
	off, size, err := d.ResourceMmapInfo(block, id, resource)
	if err != nil {
		return nil, err
	}
	prot := unix.PROT_READ | unix.PROT_WRITE
	if resource == uint32(dhal.ResourceAll) {
		prot = unix.PROT_READ // the whole-window resources are read-only
	}
	b, err := unix.Mmap(d.fd, int64(off), int(size), prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap resource %d/%d/%d at %#x+%#x: %w", block, id, resource, off, size, err)
	}
	return b, nil
}
