package dhal

// INFER_STATUS notification records, as the chip writes them and the
// runtime reads them: 16 bytes, the header type in byte 3, a u16 code in
// bytes 6-7 and a picosecond timestamp in bytes 8-15.
const (
	RecordSize = 16

	RecordStart = 2
	RecordEnd   = 3
	// The runtime rejects 0, 1, 4 and 5 on an INFER_STATUS ring, which
	// makes 4 and 5 the likely ready-program INIT and HALT codes: a guess,
	// since the halt records are not documented.
	RecordInit = 4
	RecordHalt = 5

	// ComputeEngines report in engine order PE, ACT, POOL, DVE, SP, each
	// in its own INFER_STATUS queue at NOTIFIC slots InferStatusSlot...+4.
	ComputeEngines  = 5
	InferStatusSlot = 4
)

// EngineNotifyType is each compute engine's explicit notification type
// (record header byte 3).
var EngineNotifyType = [ComputeEngines]byte{0x06, 0x0a, 0x0e, 0x12, 0x16}
