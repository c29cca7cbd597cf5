package pod

// Misc-RAM registers the election reads and writes (offsets in the misc-RAM
// block of each device).
const (
	RegSerialLo     = 0x038
	RegSerialHi     = 0x03c
	RegServerInfo   = 0x070 // PDS: bit 15 valid, bits 14:0 server id
	RegLeftSerialHi = 0x180 // election data: the left neighbour's serial (primary) or the device index (secondary)
	RegLeftSerialLo = 0x184
	RegRightSerHi   = 0x188
	RegRightSerLo   = 0x18c
	RegStatus       = 0x190 // status word, see PackStatus
	RegPodSerialHi  = 0x194
	RegPodSerialLo  = 0x198
)

// MiscRAM is the local server's devices' misc RAM.
type MiscRAM interface {
	ReadMisc(dev int, off uint32) uint32
	WriteMisc(dev int, off uint32, v uint32)
}

// Misc-RAM status byte values (low byte of RegStatus).
const (
	MRInit       uint8 = 0
	MRDeprecated uint8 = 1 // an old driver's success; never trusted as a cache
	MRFailure    uint8 = 2
	MRSuccess    uint8 = 3
)

// Status is the unpacked misc-RAM status word.
type Status struct {
	Sts     uint8
	LRMask  uint8
	NodeID  uint8 // -1 is stored as 0xff
	NodeCnt uint8
}

// PackStatus builds the word [count:31..24][node id:23..16][links:15..8][status:7..0].
func PackStatus(sts, lrMask uint8, nodeID, nodeCnt int) uint32 {
	return uint32(sts) | uint32(lrMask)<<8 | uint32(uint8(nodeID))<<16 | uint32(uint8(nodeCnt))<<24
}

// UnpackStatus splits a status word.
func UnpackStatus(w uint32) Status {
	return Status{Sts: uint8(w), LRMask: uint8(w >> 8), NodeID: uint8(w >> 16), NodeCnt: uint8(w >> 24)}
}

func readSerial(ram MiscRAM, dev int) uint64 {
	return uint64(ram.ReadMisc(dev, RegSerialHi))<<32 | uint64(ram.ReadMisc(dev, RegSerialLo))
}
