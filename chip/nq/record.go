package nq

import "github.com/neuronfs/neuronfs/dhal"

// RecordSize is the size of one notification record.
const RecordSize = dhal.RecordSize

// Record is one notification record as the chip writes it; Emit fills in
// the phase and overflow bits and the timestamp.
type Record [RecordSize]byte

// InferRecord is the INFER_STATUS record a compute engine writes at an
// execution's START, END, INIT or HALT (dhal.Record* codes): its explicit
// notification type in the header byte and the code in bytes 6-7.
func InferRecord(engine int, code uint16) Record {
	var rec Record
	rec[3] = dhal.EngineNotifyType[engine]
	rec[6], rec[7] = byte(code), byte(code>>8)
	return rec
}

// Error records. The runtime drains each core's ERROR queue (NOTIFIC slot
// 2) after every execution. The bit layout of an error record is not
// documented; this one carries the ERROR type (0x03) in the header, the
// engine and queue in bytes 4-5 and 6-7, and the emulated queue status
// bits in bytes 0-1.
const (
	ErrorSlot       = 2
	errorRecordType = 0x03
)

// DMAAbortRecord is the error record of a DMA queue that stopped on an
// error.
func DMAAbortRecord(eng, qid int, status uint32) Record {
	var rec Record
	rec[0], rec[1] = byte(status), byte(status>>8)
	rec[3] = errorRecordType
	rec[4], rec[5] = byte(eng), byte(eng>>8)
	rec[6], rec[7] = byte(qid), byte(qid>>8)
	return rec
}

// EmitInfer writes code's record into every compute engine's INFER_STATUS
// queue, in engine order.
func (b *Block) EmitInfer(code uint16) {
	for e := range dhal.ComputeEngines {
		b.Emit(dhal.InferStatusSlot+e, InferRecord(e, code))
	}
}
