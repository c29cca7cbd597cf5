package fs_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/chip/mmio"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

// pinned copies b into memory outside the Go heap, whose address a
// struct may hold as an integer across the ioctl.
func pinned(t *testing.T, b []byte) []byte {
	t.Helper()
	m, err := testutil.OffHeap(max(len(b), 1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	copy(m, b)
	return m[:len(b)]
}

func le64s(vs []uint64) []byte {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	return b
}

// barClient reads and writes BAR0 registers by offset the way a tool
// does: DEVICE_INFO's bar_address[0] plus the offset.
type barClient struct {
	t    *testing.T
	fd   int
	base uint64
}

func newBarClient(t *testing.T, fd int) *barClient {
	var info ioctl.DeviceInfo
	r, e := testutil.Ioctl(fd, ioctl.CmdDeviceInfo, &info)
	expectErrno(t, "DEVICE_INFO", r, e, 0, 0)
	return &barClient{t: t, fd: fd, base: info.BARAddress[0]}
}

func (b *barClient) rw(cmd uint32, bar uint32, offs []uint64, data []uint32) (int, unix.Errno) {
	addrs := make([]uint64, len(offs))
	for i, o := range offs {
		addrs[i] = b.base + o
	}
	a := pinned(b.t, le64s(addrs))
	d := pinned(b.t, make([]byte, 4*len(offs)))
	for i := range min(len(data), len(offs)) {
		binary.LittleEndian.PutUint32(d[4*i:], data[i])
	}
	v := ioctl.BARRW{BAR: bar, Count: uint32(len(offs)), Address: uint64(testutil.AddrOf(a)), Data: uint64(testutil.AddrOf(d))}
	r, e := testutil.Ioctl(b.fd, cmd, &v)
	for i := range min(len(data), len(offs)) {
		data[i] = binary.LittleEndian.Uint32(d[4*i:])
	}
	return r, e
}

func (b *barClient) read(offs ...uint64) []uint32 {
	b.t.Helper()
	data := make([]uint32, len(offs))
	r, e := b.rw(ioctl.CmdBARRead, 0, offs, data)
	expectErrno(b.t, fmt.Sprintf("BAR_READ %#x", offs), r, e, 0, 0)
	return data
}

func (b *barClient) write(off uint64, v uint32, wantE unix.Errno) {
	b.t.Helper()
	r, e := b.rw(ioctl.CmdBARWrite, 0, []uint64{off}, []uint32{v})
	expectErrno(b.t, fmt.Sprintf("BAR_WRITE %#x", off), r, e, 0, wantE)
}

func TestBARAndFirmware(t *testing.T) {
	dir, sys := testutil.Mount(t, "trn2.48xlarge")
	fd := openDev(t, dir, 1, unix.O_RDWR)
	bar := newBarClient(t, fd)
	f := sys.Arch
	misc := f.MiscRAMBar0

	// Identity registers come from the emulated firmware.
	got := bar.read(misc+mmio.RegAPIVersion, misc+mmio.RegSerialLo, misc+mmio.RegSerialHi, misc+mmio.RegDeviceID)
	raw, err := os.ReadFile(dir + "/sys/devices/virtual/neuron_device/neuron1/info/serial_number")
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := strconv.ParseUint(strings.TrimSpace(string(raw)), 16, 64)
	if got[0] < mmio.NewProtocolMinAPI || uint64(got[2])<<32|uint64(got[1]) != serial || got[3] != sys.Instance.RoutingID(1) {
		t.Errorf("misc RAM reads %#x (serial %#x, routing id %d)", got, serial, sys.Instance.RoutingID(1))
	}

	// Plain registers keep what is written; protected ones are refused.
	bar.write(f.TopSPWindow(3)+0x40, 0xc0ffee, 0)
	if v := bar.read(f.TopSPWindow(3) + 0x40); v[0] != 0xc0ffee {
		t.Errorf("TOP_SP register reads %#x", v[0])
	}
	bar.write(f.UDMABase(5)+0x1000+0x38, 1, unix.EINVAL) // a doorbell
	bar.write(misc+mmio.RegDoorbell, 1, unix.EINVAL)
	bar.write(f.BAR0Size, 1, unix.EINVAL)
	r, e := bar.rw(ioctl.CmdBARWrite, 4, []uint64{0}, []uint32{1})
	expectErrno(t, "BAR_WRITE bar 4", r, e, 0, unix.EINVAL)
	r, e = bar.rw(ioctl.CmdBARRead, 0, make([]uint64, 101), nil)
	expectErrno(t, "BAR_READ of 101 registers", r, e, 0, unix.EINVAL)

	// The semaphore windows do arithmetic through BAR0 too.
	sem := f.TPBBase(2) + dhal.TPBSemReadOffset + 4*9
	bar.write(f.TPBBase(2)+dhal.TPBSemSetOffset+4*9, 40, 0)
	bar.write(f.TPBBase(2)+dhal.TPBSemIncOffset+4*9, 5, 0)
	bar.write(f.TPBBase(2)+dhal.TPBSemDecOffset+4*9, 3, 0)
	s := ioctl.Semaphore{NCID: 2, SemaphoreIndex: 9}
	r, e = testutil.Ioctl(fd, ioctl.CmdSemaphoreRead, &s)
	expectErrno(t, "SEMAPHORE_READ", r, e, 0, 0)
	if v := bar.read(sem); v[0] != 42 || s.Value != 42 {
		t.Errorf("semaphore after set 40, +5, -3: BAR %d, ioctl %d", v[0], s.Value)
	}

	// A queue's ring registers show what DMA_QUEUE_INIT programmed.
	dev, err := runtime.Host{Root: dir}.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	q, err := dev.InitQueue(5, 3, 64, runtime.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	qr := f.UDMABase(5) + 0x21000 + 3*0x1000
	if v := bar.read(qr+0x28, qr+0x2c, qr+0x30); uint64(v[1])<<32|uint64(v[0]) != q.RX.PA || v[2] != 64 {
		t.Errorf("RX ring registers %#x, ring at %#x", v, q.RX.PA)
	}

	// POST_METRIC reaches the firmware and is staged in the data window.
	blob := pinned(t, []byte("neuronfs metric blob #1"))
	pm := ioctl.PostMetric{Data: uint64(testutil.AddrOf(blob)), DataSize: uint32(len(blob))}
	r, e = testutil.Ioctl(fd, ioctl.CmdPostMetric, &pm)
	expectErrno(t, "POST_METRIC", r, e, 0, 0)
	if st := sys.Devices[1].Chip().FirmwareState(); !bytes.Equal(st.LastPost, blob) || st.Posts != 1 {
		t.Errorf("firmware state after a post: %+v", st)
	}
	words := bar.read(misc+mmio.RegData, misc+mmio.RegData+4)
	if binary.LittleEndian.Uint32(blob) != words[0] || binary.LittleEndian.Uint32(blob[4:]) != words[1] {
		t.Errorf("data window %#x", words)
	}
	big := pinned(t, make([]byte, 129))
	pm = ioctl.PostMetric{Data: uint64(testutil.AddrOf(big)), DataSize: 129}
	r, e = testutil.Ioctl(fd, ioctl.CmdPostMetric, &pm)
	expectErrno(t, "POST_METRIC of 129 bytes", r, e, 0, unix.E2BIG)

	// READ_HW_COUNTERS goes through the firmware's READ command.
	addrs := pinned(t, le64s([]uint64{f.MiscRAMDevice + mmio.RegSerialLo, f.MiscRAMDevice + mmio.RegDeviceID}))
	vals := pinned(t, make([]byte, 8))
	hc := ioctl.ReadHWCounters{Address: uint64(testutil.AddrOf(addrs)), Data: uint64(testutil.AddrOf(vals)), Count: 2}
	r, e = testutil.Ioctl(fd, ioctl.CmdReadHWCounters, &hc)
	expectErrno(t, "READ_HW_COUNTERS", r, e, 0, 0)
	if binary.LittleEndian.Uint32(vals) != uint32(serial) || binary.LittleEndian.Uint32(vals[4:]) != sys.Instance.RoutingID(1) {
		t.Errorf("counters read %x", vals)
	}
	binary.LittleEndian.PutUint64(addrs[8:], 0xdead00000000)
	r, e = testutil.Ioctl(fd, ioctl.CmdReadHWCounters, &hc)
	expectErrno(t, "READ_HW_COUNTERS of an unknown address", r, e, 0, unix.EPERM)

	// POWER_PROFILE.
	pp := func(v ioctl.PowerProfile, want unix.Errno) {
		t.Helper()
		r, e := testutil.Ioctl(fd, ioctl.CmdPowerProfile, &v)
		expectErrno(t, fmt.Sprintf("POWER_PROFILE %+v", v), r, e, 0, want)
	}
	pp(ioctl.PowerProfile{Sz: 8, Profile: 2}, 0)
	if st := sys.Devices[1].Chip().FirmwareState(); st.PowerProfile != 2 {
		t.Errorf("power profile %d, want 2", st.PowerProfile)
	}
	pp(ioctl.PowerProfile{Sz: 4, Profile: 2}, unix.ENXIO)
	pp(ioctl.PowerProfile{Sz: 8, Ctrl: 1}, ioctl.ENOTSUPP)
}

// PROGRAM_ENGINE_NC64 writes into a whitelisted region; what it wrote is
// visible through the SBUF mapping. Outside the whitelist: ENOMEM.
func TestProgramEngine(t *testing.T) {
	dir, sys := testutil.Mount(t, "trn2.48xlarge")
	fd := openDev(t, dir, 0, unix.O_RDWR)
	res, ok := sys.Arch.LookupMmapResource(dhal.BlockTPB, 1, dhal.ResourceSBUF)
	if !ok {
		t.Fatal("no SBUF resource")
	}
	code := pinned(t, []byte("....instructions for core 1"))
	pe := ioctl.ProgramEngineNC64{NCID: 1, Dst: res.Offset, Buffer: uint64(testutil.AddrOf(code)), Size: uint64(len(code) - 4), Offset: 4}
	r, e := testutil.Ioctl(fd, ioctl.CmdProgramEngineNC64, &pe)
	expectErrno(t, "PROGRAM_ENGINE_NC64", r, e, 0, 0)
	m, err := unix.Mmap(fd, int64(res.Offset), int(res.Size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	if string(m[4:len(code)]) != string(code[4:]) || m[0] != 0 {
		t.Errorf("SBUF reads %q", m[:len(code)])
	}
	pe.Dst = 0x1000000000 // between HBM 0 and the first TPB window
	r, e = testutil.Ioctl(fd, ioctl.CmdProgramEngineNC64, &pe)
	expectErrno(t, "PROGRAM_ENGINE_NC64 outside the whitelist", r, e, 0, unix.ENOMEM)
	pe.Dst, pe.NCID = res.Offset, 8
	r, e = testutil.Ioctl(fd, ioctl.CmdProgramEngineNC64, &pe)
	expectErrno(t, "PROGRAM_ENGINE_NC64 core 8", r, e, 0, unix.ENOMEM)
}
