package runtime

import (
	"fmt"
	goruntime "runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/ioctl"
)

// AllocOptions say where memory goes and how it is accounted.
type AllocOptions struct {
	Host    bool   // host memory (DMA-able by the device) instead of HBM
	Channel uint32 // HBM channel (checked even for host memory)
	Core    uint32 // NeuronCore the memory is accounted to
	Align   uint64 // device memory only
	MemType uint32 // ioctl.MemType*; 0 picks the unknown category of the location
}

// Mem is one allocation on a device, known by its handle.
type Mem struct {
	dev    *Device
	Handle uint64
	Size   uint64
	PA     uint64 // the physical address, which is also the mmap offset
	Host   bool
}

// pin keeps b's memory in place while the kernel (or the daemon) reads or
// writes it through an address stored in an ioctl struct.
func pin(b []byte) (uint64, func()) {
	if len(b) == 0 {
		return 0, func() {}
	}
	var p goruntime.Pinner
	p.Pin(&b[0])
	return uint64(uintptr(unsafe.Pointer(&b[0]))), p.Unpin
}

// Alloc allocates memory that lives until Free or until this process's
// last fd of the device closes (MEM_ALLOC_V2MT64).
func (d *Device) Alloc(size uint64, o AllocOptions) (*Mem, error) {
	memType := o.MemType
	if memType == 0 && !o.Host {
		memType = ioctl.MemTypeUnknownDevice
	}
	var handle [1]uint64
	addr, unpin := pin(unsafe.Slice((*byte)(unsafe.Pointer(&handle[0])), 8))
	defer unpin()
	v := ioctl.MemAllocV2MemType64{Size: size, Align: o.Align, DramChannel: o.Channel, NCID: o.Core, MemType: memType, MemHandle: addr}
	if o.Host {
		v.HostMemory = 1
	}
	if err := do(d.fd, "MEM_ALLOC_V2MT64", ioctl.CmdMemAllocV2MT64, &v); err != nil {
		return nil, err
	}
	m := &Mem{dev: d, Handle: handle[0]}
	info, err := m.Info()
	if err != nil {
		return nil, err
	}
	m.Size, m.PA, m.Host = info.Size, info.MmapOffset, info.HostMemory != 0
	return m, nil
}

// Info is MEM_GET_EXTENDED_INFO.
func (m *Mem) Info() (ioctl.MemGetExtendedInfo, error) {
	v := ioctl.MemGetExtendedInfo{MemHandle: m.Handle}
	r, e := sysIoctl(m.dev.fd, ioctl.CmdMemGetExtendedInfo, &v)
	switch {
	case e != 0:
		return v, &Error{Cmd: "MEM_GET_EXTENDED_INFO", Errno: e}
	case r == int(unix.EINVAL): // the driver's positive EINVAL for a bad handle
		return v, &Error{Cmd: "MEM_GET_EXTENDED_INFO", Errno: unix.EINVAL}
	case r != 0:
		return v, &Error{Cmd: "MEM_GET_EXTENDED_INFO", NotCopied: r}
	}
	return v, nil
}

// Free releases the memory (MEM_FREE).
func (m *Mem) Free() error {
	v := ioctl.MemFree{MemHandle: m.Handle}
	return do(m.dev.fd, "MEM_FREE", ioctl.CmdMemFree, &v)
}

func (m *Mem) bufCopy(off uint64, p []byte, toDevice bool) error {
	addr, unpin := pin(p)
	defer unpin()
	v := ioctl.MemBufCopy64{MemHandle: m.Handle, Buffer: addr, Size: uint64(len(p)), Offset: off}
	if toDevice {
		v.CopyToMemHandle = 1
	}
	return do(m.dev.fd, "MEM_BUF_COPY64", ioctl.CmdMemBufCopy64, &v)
}

// Write copies p into the memory at off (MEM_BUF_COPY64).
func (m *Mem) Write(off uint64, p []byte) error { return m.bufCopy(off, p, true) }

// Read copies the memory at off into p (MEM_BUF_COPY64).
func (m *Mem) Read(off uint64, p []byte) error { return m.bufCopy(off, p, false) }

// Fill sets size bytes at off to v (MEMSET64).
func (m *Mem) Fill(off, size uint64, v byte) error {
	a := ioctl.Memset64{MemHandle: m.Handle, Offset: off, Size: size, Value: uint32(v)}
	return do(m.dev.fd, "MEMSET64", ioctl.CmdMemset64, &a)
}

// CopyFrom copies size bytes from src at srcOff to m at dstOff (MEM_COPY64).
func (m *Mem) CopyFrom(dstOff uint64, src *Mem, srcOff, size uint64) error {
	a := ioctl.MemCopy64{SrcMemHandle: src.Handle, DstMemHandle: m.Handle, Size: size, SrcOffset: srcOff, DstOffset: dstOff}
	return do(m.dev.fd, "MEM_COPY64", ioctl.CmdMemCopy64, &a)
}

// Map maps the whole allocation into this process, shared with the device.
func (m *Mem) Map() ([]byte, error) {
	b, err := unix.Mmap(m.dev.fd, int64(m.PA), int(m.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap neuron%d %#x+%#x: %w", m.dev.Index, m.PA, m.Size, err)
	}
	return b, nil
}
