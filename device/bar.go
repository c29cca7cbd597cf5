package device

import (
	"encoding/binary"
	"errors"
	"syscall"

	"github.com/neuronfs/neuronfs/chip/mmio"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
)

// BAR access, metrics and power commands, over the device's BAR0 register
// file and its emulated firmware.

const (
	// barReadMax is the most registers one BAR_READ reads.
	barReadMax = 100
	// kmallocMax is the largest buffer the driver's kmalloc hands out;
	// a request for more fails with ENOMEM.
	kmallocMax = 4 << 20
	// metricBlobMax is the most POST_METRIC sends (the data window).
	metricBlobMax = mmio.DataWindowSize
	// powerProfileSize is the struct size POWER_PROFILE's sz must give.
	powerProfileSize = 8
)

// fwErrno is the driver's answer to a failed legacy-mailbox exchange: -1.
func fwErrno(error) Result { return Errno(syscall.EPERM) }

// registerResult is the driver's answer after a register-protocol
// exchange: -524 when the firmware is too old for it, -1 when it does not
// know the command or (from 2.27) reported a failure, else 0, even when
// no answer ever came.
func (s *System) registerResult(err error) Result {
	switch {
	case err == nil, errors.Is(err, mmio.ErrTimeout):
		return 0
	case errors.Is(err, mmio.ErrOldFirmware):
		return Errno(ioctl.ENOTSUPP)
	case errors.Is(err, mmio.ErrFailed) && !s.quirks.FWFailIsError:
		return 0
	}
	return Errno(syscall.EPERM)
}

// readArray reads count u64s or u32s from user memory, with the driver's
// kmalloc limit and positive not-copied count.
func readArray(r *Request, addr uint64, count, size int) ([]byte, Result) {
	return readArrayInto(r, addr, count, size, nil)
}

// readArrayInto is readArray into *buf (grown as needed; nil: a new
// slice), so a caller can reuse the memory.
func readArrayInto(r *Request, addr uint64, count, size int, buf *[]byte) ([]byte, Result) {
	if count*size > kmallocMax {
		return nil, Errno(syscall.ENOMEM)
	}
	var b []byte
	if buf != nil && cap(*buf) >= count*size {
		b = (*buf)[:count*size]
	} else {
		b = make([]byte, count*size)
		if buf != nil {
			*buf = b
		}
	}
	if res := r.readUser(b, addr); res != 0 {
		return nil, res
	}
	return b, 0
}

// barOffset turns a register address (DEVICE_INFO's bar_address[0] plus
// an offset) into a BAR0 offset. Driver 2.25 does not check read addresses
// at all; here an address outside BAR0 is EFAULT there, and EINVAL from
// 2.27, which checks them all before reading.
func (d *Device) barOffset(addr uint64) (uint64, bool) {
	off := addr - d.BAR0KernelAddress()
	if addr < d.BAR0KernelAddress() || off >= d.chip.BAR0().Size() || off%4 != 0 {
		return 0, false
	}
	return off, true
}

// barReadWrite serves BAR_READ and BAR_WRITE (same struct). Only BAR0 has
// registers: BAR2 is unused on these chips and the driver's BAR2 read
// indexes past its one-address array, so it is EINVAL here.
func barReadWrite(r *Request, v *ioctl.BARRW) Result {
	addrCount := int(v.Count)
	if v.BAR != 0 {
		addrCount = 1
	}
	d := r.Dev()
	buf := d.barScratch()
	defer d.barBufs.Put(buf)
	raw, res := readArrayInto(r, v.Address, addrCount, 8, &buf.addrs)
	if res != 0 {
		return res
	}
	if r.Cmd == ioctl.CmdBARRead {
		if v.BAR != 0 {
			return Errno(syscall.EINVAL)
		}
		if v.Count > barReadMax {
			return Errno(syscall.EINVAL)
		}
		out := make([]byte, 4*v.Count)
		for i := range int(v.Count) {
			off, ok := d.barOffset(binary.LittleEndian.Uint64(raw[8*i:]))
			if !ok && d.sys.quirks.BARReadChecked {
				return Errno(syscall.EINVAL)
			} else if !ok {
				return Errno(syscall.EFAULT)
			}
			binary.LittleEndian.PutUint32(out[4*i:], d.chip.BAR0().Read32(off))
		}
		return copyOutBytes(r, v.Data, out)
	}
	data, res := readArrayInto(r, v.Data, int(v.Count), 4, &buf.data)
	if res != 0 {
		return res
	}
	if v.BAR != 0 {
		return Errno(syscall.EINVAL)
	}
	res = d.writeBAR0(raw, data)
	d.chip.Restage() // the TPB window is memory: descriptors a fed queue waits for may be there
	return res
}

// postMetric stages a blob in the data window and posts it to the
// firmware over the legacy mailbox.
func postMetric(r *Request, v *ioctl.PostMetric) Result {
	blob, res := readArray(r, v.Data, int(v.DataSize), 1)
	if res != 0 {
		return res
	}
	if len(blob) > metricBlobMax {
		return Errno(syscall.E2BIG)
	}
	d := r.Dev()
	misc := d.sys.Arch.MiscRAMBar0
	for i := 0; i < len(blob); i += 4 {
		var w [4]byte
		copy(w[:], blob[i:])
		d.chip.BAR0().Write32(misc+mmio.RegData+uint64(i), binary.LittleEndian.Uint32(w[:]))
	}
	if _, err := d.fwc.Legacy(mmio.CmdPostToCW, blob); err != nil {
		return fwErrno(err)
	}
	return 0
}

// readHWCounters asks the firmware for the values at device addresses.
// The driver's request buffer holds 65535 bytes and it does not check the
// count against it (a larger count overflows the buffer); here such a
// count is EINVAL.
func readHWCounters(r *Request, v *ioctl.ReadHWCounters) Result {
	addrs, res := readArray(r, v.Address, int(v.Count), 8)
	if res != 0 {
		return res
	}
	if len(addrs) > mmio.MailboxSize-8 {
		return Errno(syscall.EINVAL)
	}
	vals, err := r.Dev().fwc.Legacy(mmio.CmdRead, addrs)
	if err != nil {
		return fwErrno(err)
	}
	return copyOutBytes(r, v.Data, vals)
}

// POWER_PROFILE's ctrl values: set (POWER_PROFILE), get
// (GET_PERFORMANCE_PROFILE, driver 2.27).
const (
	powerProfileSet = 0
	powerProfileGet = 1
)

// readPowerProfile reads the struct both profile commands take and checks
// it as they do: sz first (ENXIO), then ctrl (ENOTSUPP).
func readPowerProfile(r *Request, ctrl uint16) (ioctl.PowerProfile, Result) {
	var v ioctl.PowerProfile
	if n := copyIn(r, r.Arg, &v); n != 0 {
		return v, n
	}
	if v.Sz != powerProfileSize {
		return v, Errno(syscall.ENXIO)
	}
	if v.Ctrl != ctrl {
		return v, Errno(ioctl.ENOTSUPP)
	}
	return v, 0
}

// powerProfile sets the chip's power profile through the firmware's
// register protocol (V3/V4); V2 has none and answers 0.
func powerProfile(r *Request) Result {
	v, res := readPowerProfile(r, powerProfileSet)
	if res != 0 {
		return res
	}
	d := r.Dev()
	if d.sys.Arch.Arch == dhal.V2 {
		return 0
	}
	payload := make([]byte, 8)
	payload[4] = uint8(v.Profile)
	_, err := d.fwc.Register(mmio.CmdSetPowerProfile, payload)
	return d.sys.registerResult(err)
}
