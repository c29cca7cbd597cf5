package mmio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/neuronfs/neuronfs/internal/memtest"
)

const (
	hostBase = 0x400000000000
	miscBar  = 0x6c84000
	miscDev  = 0x8006c84000
)

func newTestFirmware(t *testing.T, api uint32) (*Firmware, *BAR, *Client, *memtest.Flat) {
	t.Helper()
	mem := memtest.New(hostBase, 4*MailboxSize)
	other := func(addr uint64) (uint32, bool) {
		if addr == 0x1000 {
			return 0xfeed, true
		}
		return 0, false
	}
	fw := NewFirmware(api, miscDev, mem, other)
	bar, err := NewBAR(0x100000000, []Region{{Name: "misc", Base: miscBar, Size: MiscRAMSize, Block: fw}})
	if err != nil {
		t.Fatal(err)
	}
	return fw, bar, NewClient(bar, miscBar, mem, hostBase, hostBase+2*MailboxSize), mem
}

func TestRequestCRCIsCRC32C(t *testing.T) {
	// The standard check value of CRC-32C.
	if got := crc32.Checksum([]byte("123456789"), castagnoli); got != 0xe3069283 {
		t.Fatalf("castagnoli check value %#x", got)
	}
	h := [8]byte{5, 1, 16, 0, 0xaa, 0xbb, 0xcc, 0xdd}
	p := []byte("payload!")
	want := crc32.Checksum(append([]byte{5, 1, 16, 0, 0, 0, 0, 0}, p...), castagnoli)
	if got := RequestCRC(h, p); got != want {
		t.Fatalf("RequestCRC = %#x, want %#x (CRC field must count as zero)", got, want)
	}
}

func TestLegacyRead(t *testing.T) {
	fw, _, c, _ := newTestFirmware(t, 8)
	fw.Set(RegSerialLo, 0x12345678)
	addrs := make([]byte, 16)
	binary.LittleEndian.PutUint64(addrs, miscDev+RegSerialLo)
	binary.LittleEndian.PutUint64(addrs[8:], 0x1000)
	got, err := c.Legacy(CmdRead, addrs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 8 || binary.LittleEndian.Uint32(got) != 0x12345678 || binary.LittleEndian.Uint32(got[4:]) != 0xfeed {
		t.Fatalf("READ answered %x", got)
	}
	binary.LittleEndian.PutUint64(addrs, 0xdead0000)
	if _, err := c.Legacy(CmdRead, addrs); !errors.Is(err, ErrFailed) {
		t.Fatalf("READ of an unknown address: %v", err)
	}
	if _, err := c.Legacy(9, nil); !errors.Is(err, ErrUnknownCommand) {
		t.Fatalf("command 9: %v", err)
	}
	st := fw.State()
	// 1 good read, 30 failed attempts, 1 unknown command.
	if st.Requests != 32 || st.Errors != 31 {
		t.Fatalf("firmware state %+v", st)
	}
}

func TestLegacyBadCRCAndSequence(t *testing.T) {
	fw, bar, _, mem := newTestFirmware(t, 8)
	// A request written by hand with a wrong CRC.
	h := header(9, CmdPostToCW, []byte("abcd"))
	h[4] ^= 1
	copy(mem.B, h[:])
	copy(mem.B[8:], "abcd")
	resp := mem.B[2*MailboxSize:]
	bar.Write32(miscBar+RegRequestHi, uint32(hostBase>>32))
	bar.Write32(miscBar+RegRequestLo, 0)
	bar.Write32(miscBar+RegResponseHi, uint32(hostBase>>32))
	bar.Write32(miscBar+RegResponseLo, 2*MailboxSize)
	bar.Write32(miscBar+RegDoorbell, 1)
	if resp[0] != 9 || resp[1] != RespFail {
		t.Fatalf("bad CRC answered seq %d code %d", resp[0], resp[1])
	}
	if fw.State().Posts != 0 {
		t.Fatal("a request with a bad CRC was executed")
	}
	if bar.Read32(miscBar+RegDoorbell) != 0 {
		t.Fatal("the firmware left the doorbell set")
	}
}

func TestPostAndRegisterProtocol(t *testing.T) {
	fw, bar, c, _ := newTestFirmware(t, 8)
	blob := []byte("metrics blob: 26 bytes....")
	if _, err := c.Legacy(CmdPostToCW, blob); err != nil {
		t.Fatal(err)
	}
	if st := fw.State(); !bytes.Equal(st.LastPost, blob) || st.Posts != 1 {
		t.Fatalf("post: %+v", st)
	}
	if _, err := c.Register(CmdSetPowerProfile, []byte{0, 0, 0, 0, 3, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if fw.State().PowerProfile != 3 {
		t.Fatal("power profile not recorded")
	}
	addrs := make([]byte, 8)
	binary.LittleEndian.PutUint64(addrs, miscDev+RegAPIVersion)
	got, err := c.Register(CmdRead, addrs)
	if err != nil || binary.LittleEndian.Uint32(got) != 8 {
		t.Fatalf("register-protocol READ: %x %v", got, err)
	}
	if bar.Read32(miscBar+RegAck) != 0 {
		t.Fatal("ACK not cleared")
	}
	fwOld, _, cOld, _ := newTestFirmware(t, 6)
	if _, err := cOld.Register(CmdSetPowerProfile, make([]byte, 8)); !errors.Is(err, ErrOldFirmware) {
		t.Fatalf("API 6: %v", err)
	}
	if fwOld.State().Requests != 0 {
		t.Fatal("old firmware was asked")
	}
}

func TestBARPlainRegistersAndRegions(t *testing.T) {
	fw, bar, _, _ := newTestFirmware(t, 8)
	bar.Write32(0x1234, 77)
	if bar.Read32(0x1234) != 77 || bar.Read32(0x1238) != 0 {
		t.Fatal("plain registers do not keep what is written")
	}
	bar.Write32(miscBar+RegServerRack, 0x8005)
	if v, _ := fw.Read32(RegServerRack); v != 0x8005 {
		t.Fatal("a write inside the misc-RAM region did not reach the firmware")
	}
	if _, err := NewBAR(0x1000, []Region{{Name: "a", Base: 0, Size: 0x800, Block: fw}, {Name: "b", Base: 0x400, Size: 0x800, Block: fw}}); err == nil {
		t.Fatal("overlapping regions accepted")
	}
	if _, err := NewBAR(0x1000, []Region{{Name: "a", Base: 0x800, Size: 0x1000, Block: fw}}); err == nil {
		t.Fatal("a region past the end accepted")
	}
}
