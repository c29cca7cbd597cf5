package fs_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
)

// The runtime's microcode bring-up at the register level (docs/bringup.md
// step C3/C4): every NX sequencer's and Q7 core's image written over
// BAR_WRITE, one address per word, then each core's ready word read and
// claimed.

// nxImageOffset places engine e's NX sequencer DRAM image in a TPB
// window. Where the runtime puts it is not documented (guessed): the
// window is memory throughout, so any free span answers the same.
func nxImageOffset(e int) uint64 { return 0x2100000 + uint64(e)*0x40000 }

const nxEngines = 5 // PE, ACT, SP, DVE, POOL (wiki 59855581721 §4.2)

// ucodeImage is a synthetic image of n words whose first DRAM word is
// the ready magic, the rest a pattern naming where it belongs.
func ucodeImage(n int, seed uint32, dram bool) []uint32 {
	w := make([]uint32, n)
	for i := range w {
		w[i] = seed ^ uint32(i)*0x9e3779b1
	}
	if dram && n > 0 {
		w[0] = dhal.UcodeReadyMagic
	}
	return w
}

// bulkBAR issues BAR_WRITEs of many consecutive words from two off-heap
// arrays reused call after call, as the runtime's axi_write does.
type bulkBAR struct {
	t          testing.TB
	fd         int
	base       uint64
	addrs, val []byte
}

func newBulkBAR(t testing.TB, fd int, words int) *bulkBAR {
	t.Helper()
	var info ioctl.DeviceInfo
	if _, e := testutil.Ioctl(fd, ioctl.CmdDeviceInfo, &info); e != 0 {
		t.Fatalf("DEVICE_INFO: %v", e)
	}
	a, err := testutil.OffHeap(8 * words)
	if err != nil {
		t.Fatal(err)
	}
	v, err := testutil.OffHeap(4 * words)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(a); unix.Munmap(v) })
	return &bulkBAR{t: t, fd: fd, base: info.BARAddress[0], addrs: a, val: v}
}

// stage fills the arrays for a write of words at BAR0 offset off.
func (b *bulkBAR) stage(off uint64, words []uint32) ioctl.BARRW {
	for i, w := range words {
		binary.LittleEndian.PutUint64(b.addrs[8*i:], b.base+off+4*uint64(i))
		binary.LittleEndian.PutUint32(b.val[4*i:], w)
	}
	return ioctl.BARRW{Count: uint32(len(words)), Address: uint64(testutil.AddrOf(b.addrs)), Data: uint64(testutil.AddrOf(b.val))}
}

func (b *bulkBAR) write(off uint64, words []uint32) {
	b.t.Helper()
	v := b.stage(off, words)
	if r, e := testutil.Ioctl(b.fd, ioctl.CmdBARWrite, &v); r != 0 || e != 0 {
		b.t.Fatalf("BAR_WRITE of %d words at %#x: %d %v", len(words), off, r, e)
	}
}

func (b *bulkBAR) read(off uint64) uint32 {
	b.t.Helper()
	binary.LittleEndian.PutUint64(b.addrs, b.base+off)
	v := ioctl.BARRW{Count: 1, Address: uint64(testutil.AddrOf(b.addrs)), Data: uint64(testutil.AddrOf(b.val))}
	if r, e := testutil.Ioctl(b.fd, ioctl.CmdBARRead, &v); r != 0 || e != 0 {
		b.t.Fatalf("BAR_READ %#x: %d %v", off, r, e)
	}
	return binary.LittleEndian.Uint32(b.val)
}

// installUcode writes core nc's images: each NX sequencer's DRAM image,
// then per Q7 core its DRAM then its IRAM image, each of at most limit
// words (0: the whole zero-padded aperture, as the runtime writes it).
func installUcode(b *bulkBAR, f *dhal.ArchFacts, nc, limit int) {
	g, tpb := f.Q7Pool(), f.TPBBase(nc)
	words := func(n uint64) int {
		if limit > 0 {
			return min(int(n/4), limit)
		}
		return int(n / 4)
	}
	for e := range nxEngines {
		b.write(tpb+nxImageOffset(e), ucodeImage(words(0x10000), uint32(nc<<8|e), true))
	}
	for i := range g.Cores {
		b.write(tpb+g.DRAMOffset(i), ucodeImage(words(g.DRAM), uint32(nc<<8|0x80|i), true))
		b.write(tpb+g.IRAMOffset(i), ucodeImage(words(g.IRAM), uint32(nc<<8|0xc0|i), false))
	}
}

// claimUcode performs nrtucode_core_on_ucode_booted for every NX and Q7
// core of core nc: the ready word must read back, the claim is written
// and reads back, and a second claimer finds the core claimed.
func claimUcode(t testing.TB, b *bulkBAR, f *dhal.ArchFacts, dev, nc int) {
	t.Helper()
	g, tpb := f.Q7Pool(), f.TPBBase(nc)
	var ready []uint64
	for e := range nxEngines {
		ready = append(ready, tpb+nxImageOffset(e))
	}
	for i := range g.Cores {
		ready = append(ready, tpb+g.DRAMOffset(i))
	}
	for k, off := range ready {
		if v := b.read(off); v != dhal.UcodeReadyMagic {
			t.Fatalf("device %d core %d ucode core %d: ready word %#x at %#x, want %#x (error 8)", dev, nc, k, v, off, dhal.UcodeReadyMagic)
		}
		b.write(off, []uint32{dhal.UcodeClaimMagic})
		if v := b.read(off); v != dhal.UcodeClaimMagic {
			t.Fatalf("device %d core %d ucode core %d: the claim reads back %#x", dev, nc, k, v)
		}
	}
}

// Every NX and Q7 core of every NeuronCore of every device boots and is
// claimed, on each architecture's largest instance. The images are
// truncated to a few hundred words per core (the full volume is
// TestBringupFullVolume's); their first words are the same.
func TestBringupClaimsEveryCore(t *testing.T) {
	for _, inst := range []string{"trn1.32xlarge", "trn2.48xlarge", "trn3.48xlarge"} {
		t.Run(inst, func(t *testing.T) {
			dir, sys := testutil.Mount(t, inst)
			f := sys.Arch
			for dev := range sys.Devices {
				fd := openDev(t, dir, dev, unix.O_RDWR)
				b := newBulkBAR(t, fd, 512)
				for nc := range f.CoresPerDevice {
					installUcode(b, f, nc, 256)
				}
				for nc := range f.CoresPerDevice {
					claimUcode(t, b, f, dev, nc)
				}
				// A second runtime finds every core claimed.
				if v := b.read(f.TPBBase(f.CoresPerDevice-1) + f.Q7Pool().DRAMOffset(7)); v != dhal.UcodeClaimMagic {
					t.Fatalf("device %d: a second claimer reads %#x, not 'claimed by another'", dev, v)
				}
				if words, _ := sys.Devices[dev].Chip().BAR0().Plain(); words != 0 {
					t.Errorf("device %d: the install left %d words as plain registers", dev, words)
				}
			}
		})
	}
}

// One device's full documented volume: every NeuronCore's NX images and
// its eight Q7 cores' apertures written whole (V3: 8 × 384 KiB per
// NeuronCore, about 0.8 M words), read back at both ends of each image.
func TestBringupFullVolume(t *testing.T) {
	dir, sys := testutil.Mount(t, "trn2.48xlarge")
	f := sys.Arch
	fd := openDev(t, dir, 3, unix.O_RDWR)
	g := f.Q7Pool()
	b := newBulkBAR(t, fd, int(g.DRAM/4))
	chip := sys.Devices[3].Chip()
	before, err := chip.PhysicalResident()
	if err != nil {
		t.Fatal(err)
	}
	for nc := range f.CoresPerDevice {
		installUcode(b, f, nc, 0)
	}
	// What is written is what the backing holds: 8 Q7 × 384 KiB and 5
	// NX × 64 KiB per NeuronCore, and little else, so 16 devices fit the
	// default memfd limit (half of host RAM) with room.
	after, err := chip.PhysicalResident()
	if err != nil {
		t.Fatal(err)
	}
	want := uint64(f.CoresPerDevice) * (uint64(g.Cores)*(g.IRAM+g.DRAM) + nxEngines*0x10000)
	if grew := after - before; grew < want || grew > want+want/8 {
		t.Errorf("the install grew the backing by %d bytes, want about %d", grew, want)
	}
	for nc := range f.CoresPerDevice {
		tpb := f.TPBBase(nc)
		for i := range g.Cores {
			last := ucodeImage(int(g.IRAM/4), uint32(nc<<8|0xc0|i), false)
			if v := b.read(tpb + g.IRAMOffset(i) + g.IRAM - 4); v != last[len(last)-1] {
				t.Fatalf("core %d Q7 %d: last IRAM word %#x, want %#x", nc, i, v, last[len(last)-1])
			}
		}
		claimUcode(t, b, f, 3, nc)
	}
}

// A BAR0 store into the state buffer shows through the mapped SBUF
// resource, a store through the mapping reads back over BAR_READ, and
// what PROGRAM_ENGINE (a DMA into the SoC window) writes into Q7 RAM
// BAR_READ sees: one memory, as on the chip.
func TestTPBWindowOneMemory(t *testing.T) {
	for _, inst := range []string{"trn1.32xlarge", "trn2.48xlarge"} {
		t.Run(inst, func(t *testing.T) {
			dir, sys := testutil.Mount(t, inst)
			f := sys.Arch
			fd := openDev(t, dir, 0, unix.O_RDWR)
			b := newBulkBAR(t, fd, 16)
			nc := f.CoresPerDevice - 1
			res, ok := f.LookupMmapResource(dhal.BlockTPB, uint32(nc), dhal.ResourceSBUF)
			if !ok {
				t.Fatal("no SBUF resource")
			}
			m, err := unix.Mmap(fd, int64(res.Offset), 0x10000, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Munmap(m)
			b.write(f.TPBBase(nc)+0x100, []uint32{0xfeedf00d, 0x12345678})
			if v := binary.LittleEndian.Uint32(m[0x104:]); binary.LittleEndian.Uint32(m[0x100:]) != 0xfeedf00d || v != 0x12345678 {
				t.Fatalf("the mapped SBUF reads %x after BAR_WRITE", m[0x100:0x108])
			}
			binary.LittleEndian.PutUint32(m[0x200:], 0xabad1dea)
			if v := b.read(f.TPBBase(nc) + 0x200); v != 0xabad1dea {
				t.Fatalf("BAR_READ sees %#x of a store through the mapped SBUF", v)
			}
			dram := f.Q7Pool().DRAMOffset(2)
			word := pinned(t, []byte{0x34, 0xcb, 0x99, 0x60})
			pe := ioctl.ProgramEngineNC64{NCID: uint32(nc), Dst: f.TPBSoCBase(nc) + dram, Buffer: uint64(testutil.AddrOf(word)), Size: 4}
			r, e := testutil.Ioctl(fd, ioctl.CmdProgramEngineNC64, &pe)
			expectErrno(t, fmt.Sprintf("PROGRAM_ENGINE_NC64 to %#x", pe.Dst), r, e, 0, 0)
			if v := b.read(f.TPBBase(nc) + dram); v != dhal.UcodeReadyMagic {
				t.Fatalf("BAR_READ of Q7 DRAM reads %#x after PROGRAM_ENGINE wrote the ready word", v)
			}
		})
	}
}

// A BAR0 word no block models and no memory backs is kept and named in
// the cores view with its page, so a user sees what the runtime touched
// that the emulator does not understand.
func TestCoresViewNamesUnmodelledWords(t *testing.T) {
	dir, sys := testutil.Mount(t, "trn2.48xlarge")
	fd := openDev(t, dir, 2, unix.O_RDWR)
	b := newBulkBAR(t, fd, 4)
	off := sys.Arch.TopSPWindow(1) + 0x1230
	b.write(off, []uint32{7, 8, 9})
	if v := b.read(off + 8); v != 9 {
		t.Fatalf("an unmodelled word reads %d", v)
	}
	raw, err := os.ReadFile(filepath.Join(dir, fs.ControlDir, device.CoresFile))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("neuron2 BAR0: 3 unmodelled words kept as plain registers, in 1 pages: %#x(3)\n", off&^0xfff)
	if !strings.Contains(string(raw), want) {
		t.Fatalf("%s lacks %q:\n%s", device.CoresFile, want, raw)
	}
}

// BAR0 memory is device memory under the host's limit: an install the
// limit cannot hold is refused with ENOMEM, not dropped.
func TestBARWriteUnderMemoryLimit(t *testing.T) {
	// The limit is judged synchronously on memfd backing; a file backing's
	// blocks are counted as the kernel writes them back.
	t.Setenv(device.BackingEnv, "")
	const limit = 8 << 20
	dir, sys := testutil.MountConfig(t, device.Config{Instance: "trn2.3xlarge", Backing: device.Backing{}, MemoryLimit: limit})
	f := sys.Arch
	fd := openDev(t, dir, 0, unix.O_RDWR)
	b := newBulkBAR(t, fd, 1<<16)
	img := ucodeImage(1<<16, 1, true)
	for k := range 4 * limit / (4 << 16) {
		off := f.TPBBase(k%f.CoresPerDevice) + dhal.TPBSBUFSize + uint64(k/f.CoresPerDevice)<<18
		v := b.stage(off, img)
		r, e := testutil.Ioctl(fd, ioctl.CmdBARWrite, &v)
		if e == unix.ENOMEM {
			if got := b.read(off); got != 0 {
				t.Fatalf("a refused BAR_WRITE left %#x at %#x", got, off)
			}
			return
		}
		expectErrno(t, fmt.Sprintf("BAR_WRITE %d", k), r, e, 0, 0)
	}
	t.Fatalf("%d MiB of BAR_WRITE fit an %d MiB limit", 4*limit>>20, limit>>20)
}
