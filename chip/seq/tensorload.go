package seq

// TENSOR_LOAD (0xAA) and TENSOR_STORE (0xAB) are on the header's opcode
// roster (59654717735, 59661282351), but no page gives their layouts.
// The one TENSOR_LOAD form a page shows is the runtime's "dummy read"
// after CSR writes (59703506210 §3: word 0x10AA, byte 12 = 9, a register-
// form address): a read of the written register whose only known role is
// to make the writes retire before the program goes on. Here every CSR
// write completes as it issues, so that form has nothing left to do and
// runs; any other TENSOR_LOAD is counted as not emulated.

// offTLKind is the byte the fence form sets to tlFence.
const (
	offTLKind = 0x0C
	tlFence   = 9
)

// WhyTensorLoad is why a TENSOR_LOAD other than the fence is only counted.
const WhyTensorLoad = "TENSOR_LOAD's layout is not documented"

func (r *run) tensorLoad(rec *Record) (string, bool, error) {
	if rec[offTLKind] == tlFence {
		return "", false, nil
	}
	return WhyTensorLoad, false, nil
}

// NewTensorLoadFence is the runtime's read-back fence record.
func NewTensorLoadFence() *Record {
	r := NewRecord(OpTensorLoad)
	r[offTLKind] = tlFence
	return r
}
