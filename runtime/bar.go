package runtime

import (
	"encoding/binary"
	"fmt"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
)

// Register access through BAR_READ / BAR_WRITE, by BAR0 offset. The
// driver takes "kernel addresses": DEVICE_INFO's bar_address[0] plus the
// offset.

func (d *Device) barBase() (uint64, error) {
	if b := d.bar0.Load(); b != 0 {
		return b, nil
	}
	info, err := d.Info()
	if err != nil {
		return 0, err
	}
	d.bar0.Store(info.BARAddress[0])
	return info.BARAddress[0], nil
}

// ReadRegisters reads BAR0 registers (at most 100 per call).
func (d *Device) ReadRegisters(offs ...uint64) ([]uint32, error) {
	base, err := d.barBase()
	if err != nil {
		return nil, err
	}
	addrs := make([]byte, 8*len(offs))
	for i, o := range offs {
		binary.LittleEndian.PutUint64(addrs[8*i:], base+o)
	}
	data := make([]byte, 4*len(offs))
	a, unpinA := pin(addrs)
	defer unpinA()
	p, unpinD := pin(data)
	defer unpinD()
	v := ioctl.BARRW{BAR: 0, Address: a, Data: p, Count: uint32(len(offs))}
	if err := do(d.fd, "BAR_READ", ioctl.CmdBARRead, &v); err != nil {
		return nil, err
	}
	out := make([]uint32, len(offs))
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(data[4*i:])
	}
	return out, nil
}

// WriteRegister writes one BAR0 register.
func (d *Device) WriteRegister(off uint64, val uint32) error {
	base, err := d.barBase()
	if err != nil {
		return err
	}
	addr := make([]byte, 8)
	binary.LittleEndian.PutUint64(addr, base+off)
	data := make([]byte, 4)
	binary.LittleEndian.PutUint32(data, val)
	a, unpinA := pin(addr)
	defer unpinA()
	p, unpinD := pin(data)
	defer unpinD()
	v := ioctl.BARRW{BAR: 0, Address: a, Data: p, Count: 1}
	return do(d.fd, "BAR_WRITE", ioctl.CmdBARWrite, &v)
}

// facts returns the architecture facts of the device, asking it once.
func (d *Device) facts() (*dhal.ArchFacts, error) {
	if f := d.arch.Load(); f != nil {
		return f, nil
	}
	bi, err := d.BasicInfo()
	if err != nil {
		return nil, err
	}
	f := d.arch.Load()
	if f == nil {
		return nil, fmt.Errorf("neuron%d: unknown architecture %d", d.Index, bi.Architecture)
	}
	return f, nil
}
