package mmio

import (
	"encoding/binary"
	"hash/crc32"
	"time"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// Misc-RAM register offsets (relative to the misc-RAM block).
const (
	RegAPIVersion     = 0x000
	RegDeviceID       = 0x024 // routing id
	RegSerialLo       = 0x038
	RegSerialHi       = 0x03c
	RegECCSRAM        = 0x040 // ECC counters: upper 16 bits corrected, lower 16 uncorrected
	RegECCHBM0        = 0x044 // HBM1..3 follow at +4
	RegPowerUtilDie0  = 0x054 // low 16 bits utilisation in basis points, high 16 a sample counter
	RegPowerUtilDie1  = 0x058
	RegHBMRepairState = 0x064
	RegServerRack     = 0x070
	RegAck            = 0x0f0
	RegData           = 0x100 // 128-byte data window
	DataWindowSize    = 0x80
	RegPodStatus      = 0x190
	RegTPBResetMap    = 0x1d8
	RegResetRequest   = 0x1ec
	RegRequestHi      = 0x1f0 // legacy: request address; new protocol: header dword 0
	RegRequestLo      = 0x1f4 // legacy: request address; new protocol: CRC
	RegResponseHi     = 0x1f8
	RegResponseLo     = 0x1fc
	RegDoorbell       = 0x800
	RegFirmwareStatus = 0x808 // bit 3: reset in progress

	// MiscRAMSize is the extent of the misc-RAM block.
	MiscRAMSize = 0x1000
)

// BlockedMiscRAM are the mailbox registers BAR_WRITE refuses.
var BlockedMiscRAM = []uint64{RegRequestHi, RegRequestLo, RegResponseHi, RegResponseLo, RegDoorbell}

// Firmware commands and answers.
const (
	CmdRead            = 1 // payload: u64 device addresses; answer: u32 values
	CmdPostToCW        = 2 // payload: a metrics blob
	CmdSetPowerProfile = 3 // payload: u32 reserved, u8 profile, u8 voltage margin, u8 frequency, u8 OCW
	// Driver 2.27 adds GET_DATA (payload: u8 type, then the type's
	// request) and SET_FEATURE (payload: one byte of feature bits).
	CmdGetData    = 4
	CmdSetFeature = 5

	// GET_DATA types. The performance profile answers like the SET
	// payload (profile at byte 4); the available profiles take a u16
	// feature filter and answer a count and a 256-bit profile bitmap.
	GetDataPerfProfile        = 1
	GetDataAvailableProfiles  = 2
	ProfilesAll               = 0
	ProfilesHBM7200           = 5
	FeatureThrottlingNotifier = 1 << 0

	RespSuccess        = 0
	RespFail           = 1
	RespUnknownCommand = 2

	requestHeaderSize = 8
	// A response header is 4 bytes in the legacy buffers and 8 in the
	// registers (driver 2.25 subtracts 4 there but never reads data back
	// from a register-protocol answer; 2.27 subtracts 8 and does).
	legacyResponseHeaderSize   = 4
	registerResponseHeaderSize = 8
	// MailboxSize is the size of each of the driver's legacy request and
	// response buffers.
	MailboxSize = 65535
	// NewProtocolMinAPI is the first firmware API version with the
	// register (new) protocol.
	NewProtocolMinAPI = 7
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// RequestCRC is the CRC-32C the protocol puts in a request header: over
// the 8-byte header with its CRC field zero, then the payload.
func RequestCRC(header [8]byte, payload []byte) uint32 {
	header[4], header[5], header[6], header[7] = 0, 0, 0, 0
	c := crc32.Update(0, castagnoli, header[:])
	return crc32.Update(c, castagnoli, payload)
}

// Memory is what the firmware reaches by address: host memory (the legacy
// mailbox buffers) and device memory (READ requests).
type Memory interface {
	Slice(pa, n uint64) ([]byte, bool)
}

// FirmwareState is what the firmware was told, for tests and sysfs.
type FirmwareState struct {
	Requests     uint64 // served, successful or not
	Errors       uint64 // answered with an error code
	LastPost     []byte // the last POST_TO_CW blob
	Posts        uint64
	PowerProfile uint8 // last SET_POWER_PROFILE profile
	Features     uint8 // last SET_FEATURE bits
}

// Profiles is the set of performance profiles the emulated firmware
// offers (real firmware's sets are not public): profiles 0-3 in all, none
// of them for HBM-7200.
var Profiles = [32]byte{0x0f}

// ProfileCount is how many profiles Profiles holds.
const ProfileCount = 4

// Firmware is the emulated management firmware: the misc-RAM registers
// and the mailbox protocol behind the doorbell. It answers synchronously,
// so a request is complete when the doorbell write returns.
type Firmware struct {
	mem       Memory
	miscDev   uint64 // device address of the misc-RAM block (READ requests for it)
	readOther func(addr uint64) (uint32, bool)

	mu    lockrank.Mutex[lockrank.Firmware]
	regs  [MiscRAMSize / 4]uint32
	state FirmwareState

	resetDuration time.Duration
	resetFails    func() bool
	failRequests  func() bool
	resetGen      uint64 // bumps at each accepted reset request
}

// NewFirmware returns firmware with API version api whose misc RAM sits at
// device address miscDev. readOther answers READ requests for device
// addresses outside misc RAM (false: the firmware reports a failure).
func NewFirmware(api uint32, miscDev uint64, mem Memory, readOther func(uint64) (uint32, bool)) *Firmware {
	f := &Firmware{mem: mem, miscDev: miscDev, readOther: readOther}
	f.regs[RegAPIVersion/4] = api
	return f
}

// Set stores a register the firmware publishes (identity, counters).
func (f *Firmware) Set(off uint64, v uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.regs[(off%MiscRAMSize)/4] = v
}

// State returns a copy of what the firmware was told.
func (f *Firmware) State() FirmwareState {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.state
	s.LastPost = append([]byte(nil), s.LastPost...)
	return s
}

// Read32 implements Block.
func (f *Firmware) Read32(off uint64) (uint32, bool) {
	if off >= MiscRAMSize {
		return 0, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.regs[off/4], true
}

// Write32 implements Block: a write of 1 to the doorbell serves a request.
func (f *Firmware) Write32(off uint64, v uint32) bool {
	if off >= MiscRAMSize {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.regs[off/4] = v
	if off == RegDoorbell && v&1 != 0 {
		if f.regs[RegResetRequest/4] != 0 {
			f.startResetLocked()
			f.regs[RegDoorbell/4] = 0
		} else {
			f.serveLocked()
		}
	}
	return true
}

// serveLocked answers one request. The new protocol is recognised by the
// ACK register the driver sets before ringing; otherwise the request and
// response live in host memory at the addresses in the mailbox registers.
func (f *Firmware) serveLocked() {
	if f.regs[RegAck/4] != 0 && f.regs[RegAPIVersion/4] >= NewProtocolMinAPI {
		f.serveRegistersLocked()
	} else {
		f.serveLegacyLocked()
	}
	f.regs[RegDoorbell/4] = 0
}

func (f *Firmware) serveLegacyLocked() {
	reqPA := uint64(f.regs[RegRequestHi/4])<<32 | uint64(f.regs[RegRequestLo/4])
	respPA := uint64(f.regs[RegResponseHi/4])<<32 | uint64(f.regs[RegResponseLo/4])
	hdr, ok := f.mem.Slice(reqPA, requestHeaderSize)
	if !ok {
		return // nothing to answer to: the driver times out
	}
	size := uint64(binary.LittleEndian.Uint16(hdr[2:]))
	if size < requestHeaderSize {
		size = requestHeaderSize
	}
	req, ok := f.mem.Slice(reqPA, size)
	if !ok {
		return
	}
	var h [8]byte
	copy(h[:], req)
	code, answer := f.executeLocked(h, req[requestHeaderSize:])
	if code != RespSuccess {
		answer = nil
	}
	resp, ok := f.mem.Slice(respPA, legacyResponseHeaderSize+uint64(len(answer)))
	if !ok {
		return
	}
	copy(resp[legacyResponseHeaderSize:], answer)
	binary.LittleEndian.PutUint16(resp[2:], uint16(legacyResponseHeaderSize+len(answer)))
	resp[1] = code
	resp[0] = h[0] // the sequence number last: the driver polls it
}

func (f *Firmware) serveRegistersLocked() {
	var h [8]byte
	binary.LittleEndian.PutUint32(h[0:], f.regs[RegRequestHi/4])
	binary.LittleEndian.PutUint32(h[4:], f.regs[RegRequestLo/4])
	size := int(binary.LittleEndian.Uint16(h[2:]))
	n := min(max(size-requestHeaderSize, 0), DataWindowSize)
	payload := make([]byte, n)
	for i := 0; i < n; i += 4 {
		var w [4]byte
		binary.LittleEndian.PutUint32(w[:], f.regs[(RegData+uint64(i))/4])
		copy(payload[i:], w[:])
	}
	code, answer := f.executeLocked(h, payload)
	if code != RespSuccess || len(answer) > DataWindowSize {
		answer = nil
	}
	for i := 0; i < len(answer); i += 4 {
		var w [4]byte
		copy(w[:], answer[i:])
		f.regs[(RegData+uint64(i))/4] = binary.LittleEndian.Uint32(w[:])
	}
	f.regs[RegRequestHi/4] = uint32(h[0]) | uint32(code)<<8 | uint32(registerResponseHeaderSize+len(answer))<<16
	f.regs[RegAck/4] = 0
}

// executeLocked checks and runs one request: header h, payload p.
func (f *Firmware) executeLocked(h [8]byte, p []byte) (code uint8, answer []byte) {
	f.state.Requests++
	defer func() {
		if code != RespSuccess {
			f.state.Errors++
		}
	}()
	if binary.LittleEndian.Uint32(h[4:]) != RequestCRC(h, p) || (f.failRequests != nil && f.failRequests()) {
		return RespFail, nil
	}
	switch h[1] {
	case CmdRead:
		if len(p)%8 != 0 {
			return RespFail, nil
		}
		answer = make([]byte, len(p)/2)
		for i := 0; i < len(p); i += 8 {
			v, ok := f.readLocked(binary.LittleEndian.Uint64(p[i:]))
			if !ok {
				return RespFail, nil
			}
			binary.LittleEndian.PutUint32(answer[i/2:], v)
		}
		return RespSuccess, answer
	case CmdPostToCW:
		if len(p) > DataWindowSize {
			return RespFail, nil
		}
		f.state.LastPost = append(f.state.LastPost[:0], p...)
		f.state.Posts++
		return RespSuccess, nil
	case CmdSetPowerProfile:
		if len(p) != 8 {
			return RespFail, nil
		}
		f.state.PowerProfile = p[4]
		return RespSuccess, nil
	case CmdGetData:
		return f.getDataLocked(p)
	case CmdSetFeature:
		if len(p) != 1 {
			return RespFail, nil
		}
		f.state.Features = p[0]
		return RespSuccess, nil
	}
	return RespUnknownCommand, nil
}

// getDataLocked answers GET_DATA: the current performance profile in the
// SET_POWER_PROFILE layout, or the profiles available for a feature.
func (f *Firmware) getDataLocked(p []byte) (uint8, []byte) {
	if len(p) < 1 {
		return RespFail, nil
	}
	switch p[0] {
	case GetDataPerfProfile:
		answer := make([]byte, 8)
		answer[4] = f.state.PowerProfile
		return RespSuccess, answer
	case GetDataAvailableProfiles:
		if len(p) < 3 {
			return RespFail, nil
		}
		answer := make([]byte, 1+len(Profiles))
		switch binary.LittleEndian.Uint16(p[1:]) {
		case ProfilesAll:
			answer[0] = ProfileCount
			copy(answer[1:], Profiles[:])
		case ProfilesHBM7200:
		default:
			return RespFail, nil
		}
		return RespSuccess, answer
	}
	return RespFail, nil
}

// readLocked answers one address of a READ request.
func (f *Firmware) readLocked(addr uint64) (uint32, bool) {
	if addr >= f.miscDev && addr < f.miscDev+MiscRAMSize && addr%4 == 0 {
		return f.regs[(addr-f.miscDev)/4], true
	}
	if f.readOther != nil {
		return f.readOther(addr)
	}
	return 0, false
}

// FailRequests makes the firmware answer every mailbox request with a
// failure while fail reports true (fault injection).
func (f *Firmware) FailRequests(fail func() bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failRequests = fail
}
