package seq

import (
	"context"
	"testing"
	"time"
)

// The dispatch table and the opcode table agree on which opcodes are
// computed.
func TestComputeOpsClassified(t *testing.T) {
	for op := range 256 {
		_, h := computeOps[Opcode(op)]
		if c := Opcode(op).Class(); (c == ClassCompute) != h {
			t.Errorf("%v: class %d, handler %v", Opcode(op), c, h)
		}
	}
}

// Real opcodes of the header's roster whose layout is not read (0x82..0x9F:
// AFFINE_SELECT, TS_SELECT, ...) are counted as not emulated, not faulted.
func TestRosterOpcodesCounted(t *testing.T) {
	for _, op := range []Opcode{0x82, 0x92, 0x93, 0x98, 0x9A, 0x9C, 0x9F} {
		c := newCore(t)
		if r := c.run1(DVE, NewRecord(op)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 1 {
			t.Errorf("%v: %+v", op, r)
		}
	}
}

// roster is every real opcode of the header enums of V2..V5 (59654717735
// §2, 59661282351), the pseudo band and the 0xFF sentinel left out.
var roster = [][2]Opcode{
	{0x01, 0x0A}, {0x21, 0x26}, {0x30, 0x30}, {0x41, 0x4F}, {0x51, 0x54}, {0x58, 0x58}, {0x5E, 0x74},
	{0x76, 0x7F}, {0x81, 0x88}, {0x8A, 0x8F}, {0x92, 0x96}, {0x98, 0x9F}, {0xA0, 0xAB}, {0xB0, 0xB6},
	{0xB8, 0xBF}, {0xE0, 0xEA}, {0xF0, 0xF4},
}

// Every opcode on the roster is admitted: interpreted, computed or
// counted, never a fault for its opcode.
func TestRosterAdmitted(t *testing.T) {
	for _, r := range roster {
		for op := int(r[0]); op <= int(r[1]); op++ {
			if c := Opcode(op).Class(); c == ClassUnknown || c == ClassPseudo {
				t.Errorf("%v on the roster has class %d", Opcode(op), c)
			}
		}
	}
}

// 0xAA is TENSOR_LOAD and 0xAB TENSOR_STORE (the roster): the runtime's
// read-back fence (byte 12 = 9) runs, every other TENSOR_LOAD and every
// TENSOR_STORE is counted as not emulated, none stops the engine.
func TestTensorLoadStore(t *testing.T) {
	other := NewRecord(OpTensorLoad)
	other[offTLKind] = 1
	for _, tc := range []struct {
		rec *Record
		why string
	}{{NewTensorLoadFence(), ""}, {other, WhyTensorLoad}, {NewRecord(OpTensorStore), WhyNoSource}} {
		c := newCore(t)
		r := c.run1(DVE, tc.rec)
		n := c.seqs[DVE].Counts()
		var why string
		if n.LastNotEmulated != nil {
			why = n.LastNotEmulated.Why
		}
		if r.State != Halted || why != tc.why || n.NotEmulated != map[bool]uint64{true: 1}[tc.why != ""] {
			t.Errorf("% x: %+v, %d not emulated (%q), want %q", tc.rec[:13], r, n.NotEmulated, why, tc.why)
		}
	}
	if OpTensorLoad.Name() != "TENSOR_LOAD" || OpTensorStore.Name() != "TENSOR_STORE" {
		t.Errorf("names %s %s", OpTensorLoad.Name(), OpTensorStore.Name())
	}
}

// The compute records allocate per record, never per element: a record
// over 64 times the elements allocates as much as a small one.
func TestComputeAllocsPerElement(t *testing.T) {
	records := map[string]func(n uint16) []*Record{
		"tensor_tensor": func(n uint16) []*Record {
			return []*Record{NewTensorTensor(OpTensorTensor, TensorTensor{In0: DtypeFP32, In1: DtypeBF16, OutDtype: DtypeFP32, Op: ALUAdd, Channels: 4,
				Src0: contiguous(0, n), Src1: contiguous(0x8000, n), Dst: contiguous(0x10000, n)})}
		},
		"cast": func(n uint16) []*Record {
			return []*Record{NewS4D4(OpCast, S4D4{InDtype: DtypeFP32, OutDtype: DtypeInt16, Channels: 4, Src: seq4(0, n), Dst: seq4(0x10000, n)})}
		},
		"reduce": func(n uint16) []*Record {
			return []*Record{NewS4D4(OpTensorReduce, S4D4{InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 4, Op: ALUMax, OpDim: SubdimX, Src: seq4(0, n), Dst: seq4(0x10000, 1)})}
		},
		"iota": func(n uint16) []*Record {
			return []*Record{NewIota(Iota{Step: [4]int16{1}, Num: [4]uint16{n, 1, 1, 1}, OutDtype: DtypeFP32, Channels: 4, Dst: seq4(0, n)})}
		},
		"memset": func(n uint16) []*Record {
			return []*Record{NewMemset(Memset{Count: uint32(n), Dtype: DtypeFP32, Channels: 4, Dst: seq4(0, n)})}
		},
		"activate": func(n uint16) []*Record {
			return []*Record{NewActivate(Activate{BiasSrcN: 1, Src: contiguous(0, n), Dst: contiguous(0x10000, n), InDtype: DtypeFP32, BiasDtype: DtypeFP32,
				OutDtype: DtypeFP32, Channels: 4, Func: 0x05, AccumCmd: AccZeroAccumulate, Scale: FP32(1)})}
		},
		"ts_bitvec": func(n uint16) []*Record {
			return []*Record{withOp(NewTensorScalar(TensorScalar{Src: contiguous(0, n), Dst: contiguous(0x10000, n), InDtype: DtypeInt32, OutDtype: DtypeInt32,
				Channels: 4, Op0: aluXor, Op1: aluLSL, Imm0: 0xF0, Imm1: 2}), OpTensorScalarBitvec)}
		},
		"reduce_bitvec": func(n uint16) []*Record {
			return []*Record{NewS4D4(OpTensorReduceBitvec, S4D4{InDtype: DtypeUint16, OutDtype: DtypeUint16, Channels: 4, Op: aluOr, OpDim: SubdimX, Src: seq4(0, n), Dst: seq4(0x10000, 1)})}
		},
		"cast_predicated": func(n uint16) []*Record {
			return []*Record{NewTensorTensor(OpCastPredicated, TensorTensor{In0: DtypeUint8, In1: DtypeFP32, OutDtype: DtypeBF16, Channels: 4,
				Src0: contiguous(0, n), Src1: contiguous(0x8000, n), Dst: contiguous(0x10000, n)})}
		},
		"stt_and_scan": func(n uint16) []*Record {
			s := STT{Src0: Tensor2D{Step: [2]int16{1}, Num: [2]uint16{n, 1}}, Src1: Tensor2D{Start: 0x8000, Step: [2]int16{1}, Num: [2]uint16{n, 1}},
				Dst: Tensor2D{Start: 0x10000, Step: [2]int16{1}, Num: [2]uint16{n, 1}}, Op0: ALUMult, Op1: ALUAdd,
				In0: DtypeFP32, In1: DtypeFP32, OutDtype: DtypeFP32, ImmDtype: DtypeFP32, Channels: 4, Imm0Src: ImmPtr, Imm0: 0x18000}
			return []*Record{NewSTT(OpSTTArith, s), NewSTT(OpTensorTensorScan, s)}
		},
		"stream_transpose": func(n uint16) []*Record {
			return []*Record{NewS4D4(OpStreamTranspose, S4D4{InDtype: DtypeBF16, OutDtype: DtypeBF16, Channels: 32, Src: seq4(0, 2*n), Dst: seq4(0x10000, 2*n)})}
		},
		"activate_quantize": func(n uint16) []*Record {
			return []*Record{NewActivateQuantize(ActivateQuantize{QuantScale: FP32(2), DequantScale: FP32(1), Src: contiguous(0, n), Dst: contiguous(0x10000, n),
				InDtype: DtypeFP32, BiasDtype: DtypeFP32, OutDtype: DtypeUint8, Channels: 4, Func: 0x05, BiasAddr: 0x18000})}
		},
		"matmul": func(n uint16) []*Record {
			return []*Record{
				NewLdWeights(GenV3, LdWeights{Src: contiguous(0, 4), InDtype: DtypeBF16, Rows: 4, Cols: 4, RowGrp: 15, ColGrp: 15}),
				NewMatmul(GenV3, Matmul{Src: contiguous(0x100, n), InDtype: DtypeBF16, Accum: AccumStart, RowGrp: 15, ColGrp: 15, Dst: contiguous(Addr(PSUM, 0, 0), n)}),
			}
		},
	}
	for name, recs := range records {
		c := newCore(t)
		allocs := func(n uint16) float64 {
			img := ImageProgram(Assemble(0x1000, append(recs(n), halt())...))
			return testing.AllocsPerRun(5, func() {
				if r := c.seqs[DVE].Run(context.Background(), img); r.State != Halted {
					t.Fatalf("%s: %+v", name, r)
				}
			})
		}
		small, big, bigger := allocs(16), allocs(1024), allocs(4096)
		if big > small || bigger > small {
			t.Errorf("%s: %v allocations for 16 elements, %v for 1024, %v for 4096", name, small, big, bigger)
		}
	}
}

// A compute record naming 2^48 (or 2^64) elements ends when its run is
// stopped, as TENSOR_SCALAR_ARITH does.
func TestComputeStoppable(t *testing.T) {
	huge3 := Tensor3D{Start: 0, Num: [3]uint16{65535, 65535, 65535}}
	huge4 := Tensor4D{Start: 0, Num: [4]uint16{65535, 65535, 65535, 65535}}
	huge2 := Tensor2D{Start: 0, Num: [2]uint16{65535, 65535}}
	records := map[string][]*Record{
		"tensor_tensor": {NewTensorTensor(OpTensorTensor, TensorTensor{In0: DtypeFP32, In1: DtypeFP32, OutDtype: DtypeFP32, Op: ALUAdd, Channels: 128, Src0: huge3, Src1: huge3, Dst: huge3})},
		"copy":          {NewS4D4(OpCopy, S4D4{InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 128, Src: huge4, Dst: huge4})},
		"reduce":        {NewS4D4(OpTensorReduce, S4D4{InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 1, Op: ALUAdd, OpDim: SubdimXYZW, Src: huge4, Dst: seq4(0, 1)})},
		"reduce of ones": {NewS4D4(OpTensorReduce, S4D4{InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 1, Op: ALUAdd, OpDim: SubdimX,
			Src: Tensor4D{Num: [4]uint16{1, 65535, 65535, 65535}}, Dst: Tensor4D{Num: [4]uint16{65535, 65535, 65535, 1}}})},
		"memset":          {NewMemset(Memset{Count: 65535 * 65535, Dtype: DtypeFP32, Channels: 128, Dst: Tensor4D{Num: [4]uint16{65535, 65535, 1, 1}}})},
		"activate":        {NewActivate(Activate{BiasSrcN: 1, Src: huge3, Dst: huge3, InDtype: DtypeFP32, BiasDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 128, Func: 0x07})},
		"ts_bitvec":       {withOp(NewTensorScalar(TensorScalar{Src: huge3, Dst: huge3, InDtype: DtypeInt32, OutDtype: DtypeInt32, Channels: 128, Op0: aluXor}), OpTensorScalarBitvec)},
		"cast_predicated": {NewTensorTensor(OpCastPredicated, TensorTensor{In0: DtypeInt8, In1: DtypeFP32, OutDtype: DtypeBF16, Channels: 128, Src0: huge3, Src1: huge3, Dst: huge3})},
		"stt": {NewSTT(OpSTTArith, STT{Src0: huge2, Src1: huge2, Dst: huge2, Op0: ALUMult, Op1: ALUAdd,
			In0: DtypeFP32, In1: DtypeFP32, OutDtype: DtypeFP32, ImmDtype: DtypeFP32, Channels: 128})},
		"stream_transpose": {NewS4D4(OpStreamTranspose, S4D4{InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 128,
			Src: Tensor4D{Num: [4]uint16{65504, 65535, 65535, 65535}}, Dst: Tensor4D{Num: [4]uint16{65504, 65535, 65535, 65535}}})},
		"activate_quantize": {NewActivateQuantize(ActivateQuantize{QuantScale: FP32(2), DequantScale: FP32(1), Src: huge3, Dst: huge3,
			InDtype: DtypeFP32, BiasDtype: DtypeFP32, OutDtype: DtypeUint8, Channels: 128, Func: 0x05})},
		"matmul": {NewLdWeights(GenV3, LdWeights{Src: contiguous(0, 128), InDtype: DtypeBF16, Rows: 128, Cols: 128, RowGrp: 15, ColGrp: 15}),
			NewMatmul(GenV3, Matmul{Src: Tensor3D{Num: [3]uint16{4096, 65535, 65535}}, InDtype: DtypeBF16, Accum: AccumStart, RowGrp: 15, ColGrp: 15, Dst: Tensor3D{Start: Addr(PSUM, 0, 0), Step: [3]int16{1}, Num: [3]uint16{4096, 65535, 65535}}})},
	}
	for name, recs := range records {
		c := newCore(t)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		done := make(chan Result, 1)
		go func() { done <- c.seqs[PE].Run(ctx, ImageProgram(Assemble(0, append(recs, halt())...))) }()
		select {
		case r := <-done:
			if r.State != Stopped {
				t.Errorf("%s: %+v", name, r)
			}
		case <-time.After(budget):
			t.Fatalf("%s: the record did not stop", name)
		}
		cancel()
	}
}
