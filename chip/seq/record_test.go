package seq

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestDecode(t *testing.T) {
	r := NewRecord(OpCtrlES)
	r.SetEvents(Events{WaitMode: WaitSemGT, WaitIdx: 3, UpdateMode: UpdateSemAdd + UpdateCompleted, UpdateIdx: 4, WaitValue: 7})
	r.SetESEvents(Events{UpdateMode: UpdateSemWrite, UpdateIdx: 9, WaitValue: 1, UpdateValue: 2})
	got, err := Decode(r[:])
	if err != nil {
		t.Fatal(err)
	}
	// The wiki's packing of the standard tuple:
	// value<<32 | update_idx<<24 | update_mode<<16 | wait_idx<<8 | wait_mode.
	if v := got.u64(offEvents); v != 7<<32|4<<24|21<<16|3<<8|4 {
		t.Fatalf("tuple %#x", v)
	}
	if e := got.ESEvents(); e.UpdateValue != 2 || e.WaitValue != 1 || e.UpdateIdx != 9 {
		t.Fatalf("%+v", e)
	}
	// The runtime's opcode word: 0x10a9 is CTRL_BR with 16 words.
	if b := NewBranch(BranchEQ, 1, 5, -64); b[0] != 0xa9 || b[1] != 0x10 || b.Branch().Rel != -64 || b.u32(offBRRel+4) != 0 {
		t.Fatalf("% x", b[:])
	}
	if _, err := Decode(r[:63]); !errors.Is(err, ErrShort) {
		t.Fatal(err)
	}
}

// docs/isa.md lists every field the code reads.
func TestLayoutDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/isa.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Layout {
		row := "| " + f.Record + " | `" + f.Name + "` | "
		off := fmt.Sprintf("0x%02X", f.Off)
		if strings.HasPrefix(f.Record, "TENSOR") {
			off = "+" + off // a pattern's fields are relative to it
		}
		full := fmt.Sprintf("%s%s | %d | ", row, off, f.Size)
		switch {
		case !strings.Contains(string(doc), row):
			t.Errorf("docs/isa.md has no row starting %q", row)
		case !strings.Contains(string(doc), full):
			t.Errorf("docs/isa.md's row for %s %s does not start %q", f.Record, f.Name, full)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(NewRecord(OpNop)[:])
	f.Add(NewBranch(BranchGT, 1, 2, 64)[:])
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if len(b) >= RecordSize && (err == nil) != r.valid() {
			t.Fatalf("Decode says %v, the table check %v", err, r.valid())
		}
		if err != nil {
			return
		}
		if r.WordLen() != WordLen || r.Opcode().Class() < ClassControl {
			t.Fatalf("accepted % x", b[:RecordSize])
		}
	})
}

// FuzzRun runs random images on two engines of one core: whatever the
// bytes, each run ends (halt, fault, or the deadline's stop) without a
// panic, and a fault is reported as one.
func FuzzRun(f *testing.F) {
	f.Add(Assemble(0, nop(), halt()).Data, Assemble(0, NewWait(WaitSemGE, 0, 1), halt()).Data)
	f.Add(staged(PE, 0).Data, staged(SP, 0).Data)
	f.Add(Assemble(0, NewBranch(BranchAlways, 0, 0, 0)).Data, []byte{0xa0})
	// Tensor-scalar records, valid and not, on the core's memory.
	ts := TensorScalar{Src: Tensor3D{Start: 0x800000, Step: [3]int16{3, 1, 0}, Num: [3]uint16{2, 3, 1}},
		Dst: contiguous(0x2000040, 6), InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 4, Op0: ALUMult, Imm0: FP32(2), Op1: ALUAdd}
	ptr := ts
	ptr.Imm1Src, ptr.Imm1, ptr.InDtype, ptr.Reverse = ImmRegPtr, 3, DtypeBF16, RevBoth
	ptr.Dst.Start = 0x2000100 // the two engines write apart: a seed that races its own writes fails under -race
	f.Add(Assemble(0, NewTensorScalar(ts), halt()).Data, Assemble(0, NewALUImm(ALUAdd, 3, 3, 0x40), NewTensorScalar(ptr), halt()).Data)
	// The other compute records, each valid.
	for _, recs := range [][]*Record{
		{NewTensorTensor(OpTensorTensor, TensorTensor{In0: DtypeFP32, In1: DtypeBF16, OutDtype: DtypeFP32, Op: ALUSub, Channels: 2, Src0: contiguous(0, 4), Src1: contiguous(0x40, 4), Dst: contiguous(0x80, 4)})},
		{NewS4D4(OpCast, S4D4{InDtype: DtypeFP32, OutDtype: DtypeInt8, Channels: 3, Src: seq4(0, 8), Dst: seq4(0x100, 8)})},
		{NewS4D4(OpTensorReduce, S4D4{InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 3, Op: ALUAdd, OpDim: SubdimX, Src: seq4(0, 8), Dst: seq4(0x100, 1)})},
		{NewMemset(Memset{Count: 4, Dtype: DtypeFP32, Channels: 1, Dst: seq4(0, 4)}), NewIota(Iota{Num: [4]uint16{4, 1, 1, 1}, OutDtype: DtypeInt32, Channels: 2, Dst: seq4(0, 4)})},
		{NewLdWeights(GenV3, LdWeights{Src: contiguous(0, 2), InDtype: DtypeBF16, Rows: 2, Cols: 2, RowGrp: 1, ColGrp: 1}),
			NewMatmul(GenV3, Matmul{Src: contiguous(0x40, 4), InDtype: DtypeBF16, Accum: AccumStart, RowGrp: 1, ColGrp: 1, Dst: contiguous(0x2000000, 4)})},
		{withOp(NewTensorScalar(TensorScalar{Src: contiguous(0, 4), Dst: contiguous(0x40, 4), InDtype: DtypeUint16, OutDtype: DtypeUint16, Channels: 2, Op0: aluXor, Imm0: 0xFF}), OpTensorScalarBitvec),
			withOp(NewTensorScalar(TensorScalar{Src: contiguous(0, 4), Dst: contiguous(0x40, 4), InDtype: DtypeInt32, OutDtype: DtypeInt32, Channels: 2, Op0: aluLSL, Op1: aluASR, Imm0: 0x80, Imm1: 0x84}), OpTensorScalarPtrBitvec)},
		{NewS4D4(OpTensorReduceBitvec, S4D4{InDtype: DtypeInt8, OutDtype: DtypeInt8, Channels: 3, Op: aluOr, OpDim: SubdimX, Src: seq4(0, 8), Dst: seq4(0x100, 1)}),
			NewTensorTensor(OpCastPredicated, TensorTensor{In0: DtypeUint8, In1: DtypeFP32, OutDtype: DtypeBF16, Channels: 2, Src0: contiguous(0, 4), Src1: contiguous(0x40, 4), Dst: contiguous(0x80, 4)})},
		{NewSTT(OpSTTArith, STT{Src0: Tensor2D{Start: 0, Step: [2]int16{1, 2}, Num: [2]uint16{2, 2}}, Src1: Tensor2D{Start: 0x40, Num: [2]uint16{4, 1}}, Dst: Tensor2D{Start: 0x80, Step: [2]int16{1, 0}, Num: [2]uint16{4, 1}},
			Op0: ALUMult, Op1: ALUAdd, In0: DtypeFP32, In1: DtypeBF16, OutDtype: DtypeFP32, ImmDtype: DtypeFP32, Channels: 2, Imm0: FP32(2)}),
			NewSTT(OpTensorTensorScan, STT{Src0: Tensor2D{Start: 0, Step: [2]int16{1, 0}, Num: [2]uint16{4, 1}}, Src1: Tensor2D{Start: 0x40, Step: [2]int16{1, 0}, Num: [2]uint16{4, 1}}, Dst: Tensor2D{Start: 0xC0, Step: [2]int16{1, 0}, Num: [2]uint16{4, 1}},
				Op0: ALUMult, Op1: ALUAdd, In0: DtypeFP32, In1: DtypeFP32, OutDtype: DtypeFP32, ImmDtype: DtypeFP32, Channels: 2, Imm0Src: ImmPtr, Imm0: 0x100})},
		{withOp(NewTensorScalar(TensorScalar{Src: contiguous(0, 4), Dst: contiguous(0x40, 4), InDtype: DtypeBF16, OutDtype: DtypeFP32, Channels: 2, Imm0: FP32(1)}), OpExponential),
			NewActivateQuantize(ActivateQuantize{QuantScale: FP32(2), DequantScale: FP32(0.5), Src: contiguous(0, 4), Dst: contiguous(0x40, 4),
				InDtype: DtypeFP32, BiasDtype: DtypeFP16, OutDtype: DtypeUint8, Channels: 3, Func: 0x06, BiasAddr: 0x80}),
			NewS4D4(OpStreamTranspose, S4D4{InDtype: DtypeBF16, OutDtype: DtypeBF16, Channels: 32, Src: seq4(0x100, 32), Dst: seq4(0x200, 32)})},
		{withOp(NewTensorScalar(TensorScalar{Src: contiguous(0, 4), Dst: contiguous(0x40, 4), InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 2, AccumCmd: AccZeroAccumulate}), OpExponential),
			withOp(NewReadAccumulator(ReadAccumulator{Count: 1, Dtype: DtypeBF16, Negated: 1, Channels: 2, Dst: Tensor1D{Start: 0x80, Num: 1}}), OpDveReadAccumulator)},
		{NewActivate(Activate{BiasSrcN: 0, Bias: 0x100, Src: contiguous(0, 4), Dst: contiguous(0x40, 4), InDtype: DtypeFP32, BiasDtype: DtypeBF16, OutDtype: DtypeFP32, Channels: 2, Func: 0x05, AccumCmd: AccAccumulate})},
	} {
		f.Add(Assemble(0, append(recs, halt())...).Data, Assemble(0, NewRecord(OpActTableLoad), halt()).Data)
	}
	mem := NewOnChipMemory(0x38000)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var w Words
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		out := make(chan Result, 2)
		var seqs [2]*Sequencer
		gen := []Generation{GenV3, GenV2, GenV4}[len(b)%3] // the generation-keyed layouts and ops too
		for e, data := range [][]byte{a, b} {
			s := New(Config{Engine: Engine(e), Sync: &w, CSR: &csrLog{}, Notify: func(Notification) {}, YieldEvery: 256, OnChip: mem, Gen: gen})
			seqs[e] = s
			img := &Image{Base: 0x1000, Data: data}
			go func() { out <- s.Run(ctx, ImageProgram(img)) }()
		}
		// Only these two engines change the semaphores: once neither runs,
		// nothing will, so end the waits rather than sit out the deadline.
		go func() {
			for ctx.Err() == nil {
				time.Sleep(100 * time.Microsecond)
				if st0, st1 := seqs[0].Status().State, seqs[1].Status().State; st0 != Running && st1 != Running && st0 != Idle && st1 != Idle {
					cancel()
				}
			}
		}()
		for range 2 {
			r := <-out
			if (r.State == Faulted) != (r.Fault != nil) || (r.State != Faulted && r.State != Halted && r.State != Stopped) {
				t.Fatalf("%+v", r)
			}
		}
	})
}

func nop() *Record { return NewRecord(OpNop) }

// withOp gives r opcode op: the forms that share another's builder.
func withOp(r *Record, op Opcode) *Record { r[offOpcode] = byte(op); return r }
