package nq

// The error record of an engine its program stopped (garbage, a branch
// out of its image). Its bit layout is not documented; this one carries
// the TPB_ERROR type (0x1F) in the header, the error id (SEQUENCER_FATAL
// 0x0A) in byte 4, the engine in byte 5, and the record's line (its
// address in 64-byte units, 20 bits) in bytes 0-1 and the low nibble of
// byte 2, where an EXPLICIT record keeps its program counter.
const tpbErrorRecordType = 0x1f

// SequencerErrorRecord is the ERROR-queue record of engine e stopped at
// the record at device address pc with error id id.
func SequencerErrorRecord(e int, pc uint64, id uint8) Record {
	var rec Record
	line := pc / 64
	rec[0], rec[1], rec[2] = byte(line), byte(line>>8), byte(line>>16)&0x0f
	rec[3] = tpbErrorRecordType
	rec[4], rec[5] = id, byte(e)
	return rec
}
