package seq

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// put32s stores fp32 or int32 words from byte off of partition p of g.
func (c *core) put32s(g Region, p int, off uint32, words ...uint32) {
	c.t.Helper()
	b, err := c.mem.Partition(g, p, 0, c.mem.Active(g), true)
	if err != nil {
		c.t.Fatal(err)
	}
	for i, w := range words {
		le.PutUint32(b[off+uint32(4*i):], w)
	}
}

// get32s reads n words from byte off of partition p of g.
func (c *core) get32s(g Region, p int, off uint32, n int) []uint32 {
	c.t.Helper()
	b, err := c.mem.Partition(g, p, 0, c.mem.Active(g), false)
	if err != nil {
		c.t.Fatal(err)
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = le.Uint32(b[off+uint32(4*i):])
	}
	return out
}

func fp32s(fs ...float32) []uint32 {
	out := make([]uint32, len(fs))
	for i, f := range fs {
		out[i] = math.Float32bits(f)
	}
	return out
}

// run1 runs recs on engine e and returns its result.
func (c *core) run1(e Engine, recs ...*Record) Result {
	c.t.Helper()
	return c.seqs[e].Run(context.Background(), ImageProgram(Assemble(0x1000, append(recs, halt())...)))
}

// contiguous is a pattern of n elements one after another.
func contiguous(a uint32, n uint16) Tensor3D {
	return Tensor3D{Start: a, Step: [3]int16{1, 0, 0}, Num: [3]uint16{n, 1, 1}}
}

// A 2x3 fp32 matrix in SBUF quadrant 1, on two partitions, is read
// column by column (a transposing step pattern: dim 0 walks a column)
// and written as a 3x2 matrix in PSUM, each element x*2+1.
func TestTensorScalarFP32Transpose(t *testing.T) {
	c := newCore(t)
	const p0, off = 32, 0x100 // quadrant 1: ISA address 0x800000 + off
	rows := [2][]uint32{fp32s(1, 2, 3, 4, 5, 6), fp32s(-1, -2, -3, -4, -5, -6)}
	for p, m := range rows {
		c.put32s(SBUF, p0+p, off, m...)
	}
	ts := TensorScalar{
		Src:     Tensor3D{Start: Addr(SBUF, p0, off), Step: [3]int16{3, 1, 0}, Num: [3]uint16{2, 3, 1}},
		Dst:     Tensor3D{Start: Addr(PSUM, 4, 0x40), Step: [3]int16{1, 2, 7}, Num: [3]uint16{2, 3, 1}},
		InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 2,
		Op0: ALUMult, Imm0: FP32(2), Op1: ALUAdd, Imm1: FP32(1),
	}
	if Addr(SBUF, p0, off) != 0x800100 {
		t.Fatalf("quadrant 1 at %#x", Addr(SBUF, p0, 0))
	}
	if res := c.run1(DVE, NewTensorScalar(ts)); res.State != Halted {
		t.Fatalf("%+v", res)
	}
	for p, m := range rows {
		got := c.get32s(PSUM, 4+p, 0x40, 6)
		for i := range 2 {
			for j := range 3 {
				want := math.Float32frombits(m[i*3+j])*2 + 1
				if g := math.Float32frombits(got[j*2+i]); g != want {
					t.Errorf("partition %d [%d][%d]: %v, want %v", p, j, i, g, want)
				}
			}
		}
	}
	if n := c.seqs[DVE].Counts(); n.NotEmulated != 0 || n.ByOpcode[OpTensorScalar] != 1 {
		t.Fatalf("counts %+v", n.NotEmulated)
	}
	if c.mem.Touched(PSUM) != 2 {
		t.Fatalf("%d PSUM partitions allocated", c.mem.Touched(PSUM))
	}
}

// int32 in a 3-D pattern walked backwards (negative steps), computed as
// s0 - x (reverse First), then max with s1; and a scalar read per
// partition through a pointer.
func TestTensorScalarInt32(t *testing.T) {
	c := newCore(t)
	// 2x2x2 int32 cube at offset 0x200 of partitions 0 and 1.
	for p := range 2 {
		c.put32s(SBUF, p, 0x200, 0, 1, 2, 3, 4, 5, 6, 7)
		c.put32s(SBUF, p, 0x1000, FP32(float32(10*(p+1)))) // the per-partition s0
	}
	last := uint32(0x200 + 7*4)
	ts := TensorScalar{
		Src:     Tensor3D{Start: Addr(SBUF, 0, last), Step: [3]int16{-1, -2, -4}, Num: [3]uint16{2, 2, 2}},
		Dst:     contiguous(Addr(SBUF, 0, 0x400), 8),
		InDtype: DtypeInt32, OutDtype: DtypeInt32, Channels: 2,
		Op0: ALUSub, Imm0Src: ImmPtr, Imm0: Addr(SBUF, 0, 0x1000),
		Op1: ALUMax, Imm1: FP32(5), Reverse: RevFirst,
	}
	if res := c.run1(POOL, NewTensorScalar(ts)); res.State != Halted {
		t.Fatalf("%+v", res)
	}
	for p := range 2 {
		got := c.get32s(SBUF, p, 0x400, 8)
		for i, g := range got {
			x := int32(7 - i) // walked from the last element back
			want := max(int32(10*(p+1))-x, 5)
			if int32(g) != want {
				t.Errorf("partition %d element %d: %d, want %d", p, i, int32(g), want)
			}
		}
	}
}

// Each emulated op, forward and reversed, on fp32 3 and 5.
func TestTensorScalarOps(t *testing.T) {
	cases := []struct {
		op       ALUOp
		fwd, rev float32 // 3 op 5, 5 op 3
	}{
		{ALUAdd, 8, 8}, {ALUSub, -2, 2}, {ALUMult, 15, 15}, {ALUMax, 5, 5}, {ALUMin, 3, 3},
		{0x17, 2, 2}, // abs_diff
		{0x12, 0, 0}, {0x13, 0, 1}, {0x14, 0, 1}, {0x15, 1, 0}, {0x16, 1, 0}, {0x18, 1, 1},
	}
	c := newCore(t)
	c.put32s(SBUF, 0, 0, FP32(3))
	for _, k := range cases {
		for _, rev := range []RevOps{RevNone, RevFirst} {
			ts := TensorScalar{Src: contiguous(0, 1), Dst: contiguous(8, 1), InDtype: DtypeFP32, OutDtype: DtypeFP32,
				Channels: 1, Op0: k.op, Imm0: FP32(5), Reverse: rev}
			if res := c.run1(ACT, NewTensorScalar(ts)); res.State != Halted {
				t.Fatalf("%v: %+v", k.op.tsName(), res)
			}
			want := k.fwd
			if rev == RevFirst {
				want = k.rev
			}
			if got := math.Float32frombits(c.get32s(SBUF, 0, 8, 1)[0]); got != want {
				t.Errorf("%v reverse %d: %v, want %v", k.op.tsName(), rev, got, want)
			}
		}
	}
	// op1 reversed: 5 - (3 + 1).
	ts := TensorScalar{Src: contiguous(0, 1), Dst: contiguous(8, 1), InDtype: DtypeFP32, OutDtype: DtypeFP32,
		Channels: 1, Op0: ALUAdd, Imm0: FP32(1), Op1: ALUSub, Imm1: FP32(5), Reverse: RevSecond}
	c.run1(ACT, NewTensorScalar(ts))
	if got := math.Float32frombits(c.get32s(SBUF, 0, 8, 1)[0]); got != 1 {
		t.Errorf("5 - (3+1) = %v", got)
	}
}

// Conversions on the way in and out: bf16 and fp16 round to nearest even,
// integers round and saturate.
func TestTensorScalarDtypes(t *testing.T) {
	cases := []struct {
		in, out Dtype
		x       []byte // one source element
		mult    float32
		want    []byte
	}{
		{DtypeBF16, DtypeBF16, []byte{0x80, 0x3f}, 3, []byte{0x40, 0x40}},             // 1.0*3 = 3.0
		{DtypeFP16, DtypeFP32, []byte{0x00, 0x3c}, 0.5, []byte{0, 0, 0, 0x3f}},        // 1.0*0.5
		{DtypeUint8, DtypeUint8, []byte{200}, 2, []byte{255}},                         // saturates
		{DtypeInt8, DtypeInt16, []byte{0x80}, 2.5, []byte{0xc0, 0xfe}},                // -128*2.5 = -320
		{DtypeInt16, DtypeUint16, []byte{0xff, 0xff}, 1, []byte{0, 0}},                // -1 clamps to 0
		{DtypeUint16, DtypeInt32, []byte{3, 0}, 0.5, []byte{2, 0, 0, 0}},              // 1.5 rounds to even 2
		{DtypeUint32, DtypeFP32, []byte{0, 0, 0, 0x80}, 1, []byte{0, 0, 0, 0x4f}},     // 2^31
		{DtypeFP32, DtypeInt32, []byte{0, 0, 0xc0, 0x7f}, 1, []byte{0, 0, 0, 0}},      // NaN -> 0
		{DtypeFP32, DtypeBF16, []byte{0x00, 0x80, 0x80, 0x3f}, 1, []byte{0x80, 0x3f}}, // tie to even
	}
	c := newCore(t)
	for _, k := range cases {
		b, _ := c.mem.Partition(SBUF, 0, 0, c.mem.Active(SBUF), true)
		copy(b[0x40:], k.x)
		clear(b[0x80:0x90])
		ts := TensorScalar{Src: contiguous(0x40, 1), Dst: contiguous(0x80, 1), InDtype: k.in, OutDtype: k.out,
			Channels: 1, Op0: ALUMult, Imm0: FP32(k.mult)}
		if res := c.run1(SP, NewTensorScalar(ts)); res.State != Halted {
			t.Fatalf("%v->%v: %+v", k.in, k.out, res)
		}
		if got := b[0x80 : 0x80+len(k.want)]; string(got) != string(k.want) {
			t.Errorf("%v->%v of % x * %v: % x, want % x", k.in, k.out, k.x, k.mult, got, k.want)
		}
	}
}

// A register-form address takes its register's value (set by CTRL_AL).
func TestTensorScalarRegisterAddress(t *testing.T) {
	c := newCore(t)
	c.put32s(SBUF, 64, 0x20, FP32(4))
	ts := TensorScalar{Src: contiguous(RegAddr(7), 1), Dst: contiguous(Addr(SBUF, 64, 0x24), 1),
		InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 1, Op0: ALUAdd, Imm0: FP32(1)}
	if res := c.run1(PE, NewALUImm(ALUAdd, 7, 7, Addr(SBUF, 64, 0x20)), NewTensorScalar(ts)); res.State != Halted {
		t.Fatalf("%+v", res)
	}
	if got := math.Float32frombits(c.get32s(SBUF, 64, 0x24, 1)[0]); got != 5 {
		t.Fatalf("got %v", got)
	}
}

// A record reaching past its partition's memory stops its engine alone:
// the other engines of the core run on, one of them computing.
func TestTensorScalarOutOfAperture(t *testing.T) {
	c := newCore(t)
	c.put32s(SBUF, 0, 0, FP32(2))
	good := TensorScalar{Src: contiguous(0, 1), Dst: contiguous(4, 1), InDtype: DtypeFP32, OutDtype: DtypeFP32,
		Channels: 1, Op0: ALUMult, Imm0: FP32(10)}
	bad := good
	bad.Src, bad.Dst = contiguous(0, 4), contiguous(testSBUFActive-8, 4) // runs into the pad of the 256 KiB stride
	pe := Assemble(0x1000, NewTensorScalar(bad), semInc(1), halt())
	act := Assemble(0x2000, NewWait(WaitSemGE, 2, 1), NewTensorScalar(good), halt())
	pool := Assemble(0x3000, semInc(2), halt())
	got := c.results(c.start(context.Background(), map[Engine]*Image{PE: pe, ACT: act, POOL: pool}), 3)
	if r := got[PE]; r.State != Faulted || !errors.Is(r.Fault, ErrAperture) || r.PC != 0x1000 {
		t.Fatalf("PE: %+v", r)
	}
	if got[ACT].State != Halted || got[POOL].State != Halted {
		t.Fatalf("ACT %+v, POOL %+v", got[ACT], got[POOL])
	}
	if v := math.Float32frombits(c.get32s(SBUF, 0, 4, 1)[0]); v != 20 {
		t.Fatalf("ACT's result %v", v)
	}
	if n := c.note(); n.Kind != NotifyError || n.Engine != PE || n.ErrorID != ErrorIDSequencerFatal {
		t.Fatalf("%+v", n)
	}
	if c.words.Semaphore(1) != 0 {
		t.Fatal("PE went on past its fault")
	}
	// Other ways out: PSUM past its 16 KiB, the partitions past 127,
	// addresses in no region, a negative step before the partition.
	for _, dst := range []Tensor3D{
		contiguous(Addr(PSUM, 0, 0x4000-4), 2),
		contiguous(Addr(SBUF, 127, 0), 1), // with 2 channels
		contiguous(0x2400000, 1),
		{Start: 8, Step: [3]int16{-4, 0, 0}, Num: [3]uint16{2, 1, 1}},
	} {
		b := good
		b.Dst, b.Channels = dst, 2
		b.Src = Tensor3D{Start: 0, Num: dst.Num}
		if r := c.run1(DVE, NewTensorScalar(b)); r.State != Faulted || !errors.Is(r.Fault, ErrAperture) {
			t.Errorf("dst %v: %+v", dst, r)
		}
	}
}

// Fields the validators reject stop the engine with ErrOperand.
func TestTensorScalarInvalid(t *testing.T) {
	base := TensorScalar{Src: contiguous(0, 2), Dst: contiguous(0x100, 2), InDtype: DtypeFP32, OutDtype: DtypeFP32,
		Channels: 1, Op0: ALUAdd}
	for name, f := range map[string]func(*TensorScalar){
		"accumulator":     func(ts *TensorScalar) { ts.AccumCmd = 2 },
		"reserved":        func(ts *TensorScalar) { ts.Reserved[1] = 1 },
		"no channels":     func(ts *TensorScalar) { ts.Channels = 0 },
		"129 channels":    func(ts *TensorScalar) { ts.Channels = 129 },
		"divide":          func(ts *TensorScalar) { ts.Op0 = 7 },
		"bypass then add": func(ts *TensorScalar) { ts.Op0, ts.Op1 = ALUBypass, ALUAdd },
		"fp32r in":        func(ts *TensorScalar) { ts.InDtype = DtypeFP32R },
		"dtype 16":        func(ts *TensorScalar) { ts.OutDtype = 16 },
		"imm source 3":    func(ts *TensorScalar) { ts.Imm1Src = 3 },
		"reverse 4":       func(ts *TensorScalar) { ts.Reverse = 4 },
		"counts differ":   func(ts *TensorScalar) { ts.Dst.Num[0] = 3 },
		"count 0":         func(ts *TensorScalar) { ts.Src.Num[2], ts.Dst.Num[2] = 0, 0 },
		"misaligned":      func(ts *TensorScalar) { ts.Src.Start = 2 },
		"bf16 into PSUM":  func(ts *TensorScalar) { ts.Dst.Start, ts.OutDtype = Addr(PSUM, 0, 0), DtypeBF16 },
		"register 64":     func(ts *TensorScalar) { ts.Src.Start = RegAddr(64) },
		"rsqrt with imm":  func(ts *TensorScalar) { ts.Op0, ts.Imm0 = aluRsqrt, 1 },
	} {
		ts := base
		f(&ts)
		c := newCore(t)
		if r := c.run1(DVE, NewTensorScalar(ts)); r.State != Faulted || !errors.Is(r.Fault, ErrOperand) {
			t.Errorf("%s: %+v", name, r)
		}
	}
}

// Valid records this package cannot compute are counted, not faulted:
// FP8, an indirect address, no memory.
func TestTensorScalarNotEmulated(t *testing.T) {
	base := TensorScalar{Src: contiguous(0, 2), Dst: contiguous(0x100, 2), InDtype: DtypeFP32, OutDtype: DtypeFP32,
		Channels: 1, Op0: ALUAdd}
	for name, f := range map[string]func(*TensorScalar){
		"fp8":      func(ts *TensorScalar) { ts.InDtype = DtypeFP8E4 },
		"indirect": func(ts *TensorScalar) { ts.Src.Start = 0x20000000 },
	} {
		ts := base
		f(&ts)
		c := newCore(t)
		c.put32s(SBUF, 0, 0x100, 7)
		if r := c.run1(DVE, NewTensorScalar(ts)); r.State != Halted || c.seqs[DVE].Counts().NotEmulated != 1 {
			t.Errorf("%s: %+v, counts %+v", name, r, c.seqs[DVE].Counts().NotEmulated)
		}
		if c.get32s(SBUF, 0, 0x100, 1)[0] != 7 {
			t.Errorf("%s wrote", name)
		}
	}
	s := New(Config{Engine: DVE})
	if r := s.Run(context.Background(), ImageProgram(Assemble(0, NewTensorScalar(base), halt()))); r.State != Halted || s.Counts().NotEmulated != 1 {
		t.Fatalf("without memory: %+v", r)
	}
}

// A record naming 2^48 elements ends when its run is stopped.
func TestTensorScalarStoppable(t *testing.T) {
	c := newCore(t)
	huge := Tensor3D{Start: 0, Num: [3]uint16{65535, 65535, 65535}}
	ts := TensorScalar{Src: huge, Dst: huge, InDtype: DtypeFP32, OutDtype: DtypeFP32, Channels: 128, Op0: ALUAdd, Imm0: FP32(1)}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan Result, 1)
	go func() { done <- c.seqs[PE].Run(ctx, ImageProgram(Assemble(0, NewTensorScalar(ts), halt()))) }()
	select {
	case r := <-done:
		if r.State != Stopped {
			t.Fatalf("%+v", r)
		}
	case <-time.After(budget):
		t.Fatal("the record did not stop")
	}
}

// Resetting a region forgets it; the other stays.
func TestOnChipReset(t *testing.T) {
	c := newCore(t)
	c.put32s(PSUM, 3, 0, 9)
	c.put32s(SBUF, 3, 0, 9)
	c.mem.Reset(PSUM)
	if c.mem.Touched(PSUM) != 0 || c.get32s(PSUM, 3, 0, 1)[0] != 0 || c.get32s(SBUF, 3, 0, 1)[0] != 9 {
		t.Fatal("reset")
	}
}

// DMA_DIRECT2D is host-only: the runtime lowers it into DMA descriptors,
// so an engine meeting one stops, as on any pseudo opcode.
func TestDMADirect2DIsPseudo(t *testing.T) {
	c := newCore(t)
	r := c.run1(SP, NewRecord(OpDMADirect2D))
	if r.State != Faulted || !errors.Is(r.Fault, ErrPseudoOpcode) || !strings.Contains(r.Fault.Error(), "DMA_DIRECT2D(0xd4)") {
		t.Fatalf("%+v", r)
	}
}

// The trace shows a tensor-scalar record by its ops and a CTRL_WR on its
// own, named by the core.
func TestTraceComputeAndCSR(t *testing.T) {
	var tr traceLog
	mem := NewOnChipMemory(testSBUFActive)
	s := New(Config{Engine: DVE, OnChip: mem, Tracer: &tr, CSR: namedCSR{}})
	ts := TensorScalar{Src: contiguous(0, 1), Dst: contiguous(4, 1), InDtype: DtypeFP32, OutDtype: DtypeBF16,
		Channels: 1, Op0: ALUMult, Imm0: FP32(2), Op1: ALUMax}
	img := Assemble(0, nop(), NewTensorScalar(ts), NewCSRWrite(0x1234, 1), nop(), halt())
	if r := s.Run(context.Background(), ImageProgram(img)); r.State != Halted {
		t.Fatalf("%+v", r)
	}
	var names []string
	for _, ev := range tr.evs {
		names = append(names, ev.Op.Name()+"|"+ev.Detail)
	}
	want := "NOP|,TENSOR_SCALAR_ARITH|mult, max fp32->bf16,CTRL_WR|queue x <- 1,NOP|"
	if got := strings.Join(names, ","); got != want {
		t.Fatalf("trace %s\nwant  %s", got, want)
	}
}

type traceLog struct{ evs []TraceEvent }

func (l *traceLog) Trace(ev TraceEvent) { l.evs = append(l.evs, ev) }

type namedCSR struct{}

func (namedCSR) WriteCSR(Engine, uint64, uint32, uint8) error { return nil }
func (namedCSR) NameCSR(addr uint64) string {
	if addr == 0x1234 {
		return "queue x"
	}
	return ""
}
