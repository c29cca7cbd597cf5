package seq

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// The row fast path (rows.go) against the element walker: the same
// random record on the same random memory, run once each way, must leave
// every byte the same and end the same way.

// rowActive is the SBUF bytes per partition of these tests: small, so
// the random patterns often meet and overlap.
const rowActive = 0x1000

// rowParts is how many partitions a random record reaches at most.
const rowParts = 16

// rowSpecials are the fp32 inputs the fast path must not change:
// quiet and signalling NaNs with payloads, infinities, denormals, zeros.
var rowSpecials = []uint32{
	0x7FC0_0001, 0xFFC1_2345, 0x7F80_0001, 0xFFA0_0F00, 0x7F80_0000, 0xFF80_0000,
	0x0000_0001, 0x807F_FFFF, 0x0040_0000, 0x8000_0000, 0, 0x7F7F_FFFF, 0x3F80_0000,
}

// rowHalfSpecials are bf16 and fp16 ones, two to a word.
var rowHalfSpecials = []uint16{0x7FC1, 0xFF81, 0x7F80, 0xFF80, 0x0001, 0x8080, 0x8000, 0x7C00, 0x7E01, 0x03FF, 0x3C00, 0x7F7F}

// fillRows fills the partitions with words from seed: ordinary numbers,
// a quarter of them special.
func fillRows(t *testing.T, mem *OnChipMemory, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	for p := range rowParts {
		b, err := mem.Partition(SBUF, p, 0, rowActive, true)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(b); i += 4 {
			var w uint32
			switch rng.IntN(8) {
			case 0:
				w = rowSpecials[rng.IntN(len(rowSpecials))]
			case 1:
				w = uint32(rowHalfSpecials[rng.IntN(len(rowHalfSpecials))])<<16 | uint32(rowHalfSpecials[rng.IntN(len(rowHalfSpecials))])
			case 2:
				w = rng.Uint32()
			default:
				w = math.Float32bits(float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(7)-3))))
			}
			le.PutUint32(b[i:], w)
		}
	}
}

// rowGen draws random element-wise records.
type rowGen struct{ rng *rand.Rand }

func (g rowGen) pick(n int) int { return g.rng.IntN(n) }

// dtype is an arithmetic dtype, the common float ones most often.
func (g rowGen) dtype() Dtype {
	ds := []Dtype{DtypeFP32, DtypeFP32, DtypeFP32, DtypeBF16, DtypeBF16, DtypeFP16, DtypeInt8, DtypeUint8, DtypeInt16, DtypeUint16, DtypeInt32, DtypeUint32}
	return ds[g.pick(len(ds))]
}

// shape is the element count as rows × cols, shared by the operands.
type shape struct{ rows, cols int }

// pattern lays sh out for an operand of dtype d: unit-step rows (packed,
// padded, one flat run, rows repeated), or a stride or reversal that the
// fast path leaves to the walker. It returns the pattern relative to
// byte 0 and the bytes it spans.
func (g rowGen) pattern(sh shape, d Dtype) (t Tensor4D, span int) {
	r, c := uint16(sh.rows), uint16(sh.cols)
	t.Num = [4]uint16{c, r, 1, 1}
	switch g.pick(10) {
	case 0, 1, 2, 3: // packed rows
		t.Step = [4]int16{1, int16(c)}
	case 4: // padded rows
		t.Step = [4]int16{1, int16(c) + int16(1+g.pick(5))}
	case 5: // one flat run
		t.Num, t.Step = [4]uint16{r * c, 1, 1, 1}, [4]int16{1}
	case 6, 7: // every row the same (a broadcast)
		t.Step = [4]int16{1, 0}
	case 8: // every other element
		t.Step = [4]int16{2, 2 * int16(c)}
	case 9: // each row backwards
		t.Step = [4]int16{-1, int16(c)}
	}
	lo, hi := t.span()
	return t, int(hi-lo+1) * int(dtypes[d].size)
}

// place puts t at a random aligned offset of a random first partition
// where its span fits, or at the address at (same partition, aligned)
// when at is not nil.
func (g rowGen) place(t *Tensor4D, span int, d Dtype, at *uint32) {
	sz := int(dtypes[d].size)
	lo, _ := t.span()
	var start uint32
	if at != nil && int(*at%regions[SBUF].stride)+span <= rowActive && *at%uint32(sz) == 0 {
		start = *at
	} else {
		off := g.pick((rowActive-span)/sz+1) * sz
		start = Addr(SBUF, g.pick(rowParts/2), uint32(off))
	}
	t.Start = uint32(int64(start) - lo*int64(sz))
}

// t3 is a 4-D pattern as a 3-D one (its last dimension is one).
func t3(t Tensor4D) Tensor3D {
	return Tensor3D{Start: t.Start, Step: [3]int16(t.Step[:3]), Num: [3]uint16(t.Num[:3])}
}

// operands draws n patterns of sh for dtypes ds, the last (the
// destination) often on a source's address: the same pattern in place,
// or one shifted onto it.
func (g rowGen) operands(sh shape, ds ...Dtype) []Tensor4D {
	ts := make([]Tensor4D, len(ds))
	var firstLo uint32
	for i, d := range ds {
		t, span := g.pattern(sh, d)
		var at *uint32
		if i == len(ds)-1 && i > 0 {
			switch g.pick(6) {
			case 0, 1: // in place: the first operand's pattern and place
				t, at = ts[0], &firstLo
				t.Start = 0
				lo, hi := t.span()
				span = int(hi-lo+1) * int(dtypes[d].size)
			case 2: // a few elements on
				a := firstLo + uint32(g.pick(4)*int(dtypes[d].size))
				at = &a
			}
		}
		g.place(&t, span, d, at)
		if i == 0 {
			lo, _ := t.span()
			firstLo = uint32(int64(t.Start) + lo*int64(dtypes[d].size))
		}
		ts[i] = t
	}
	return ts
}

var (
	rowTTOps = []ALUOp{ALUAdd, ALUSub, ALUMult, ALUMax, ALUMin, ALUAdd, ALUMult, 0x12, 0x17, 0x20, aluPow}
	rowTSOps = []ALUOp{ALUBypass, ALUAdd, ALUSub, ALUMult, ALUMax, ALUMin, 0x13, 0x19, 0x22}
)

// record draws one record: TENSOR_TENSOR, TENSOR_SCALAR_ARITH,
// ACTIVATE, COPY, CAST or RECIPROCAL.
func (g rowGen) record() *Record {
	sh := shape{rows: 1 + g.pick(6), cols: 1 + g.pick(64)}
	ch := uint8(1 + g.pick(rowParts/2))
	switch g.pick(5) {
	case 0, 1:
		ds := []Dtype{g.dtype(), g.dtype(), g.dtype()}
		ts := g.operands(sh, ds...)
		return NewTensorTensor(OpTensorTensor, TensorTensor{In0: ds[0], In1: ds[1], OutDtype: ds[2], Op: rowTTOps[g.pick(len(rowTTOps))],
			Channels: ch, Src0: t3(ts[0]), Src1: t3(ts[1]), Dst: t3(ts[2])})
	case 2:
		return g.tsRecord(sh, ch)
	case 3:
		if g.pick(2) == 0 {
			return g.actRecord(sh, ch)
		}
	}
	op := []Opcode{OpCopy, OpCast, OpReciprocal}[g.pick(3)]
	in, out := g.dtype(), g.dtype()
	if op == OpCopy {
		out = in
	}
	ts := g.operands(sh, in, out)
	return NewS4D4(op, S4D4{InDtype: in, OutDtype: out, Channels: ch, Src: ts[0], Dst: ts[1]})
}

// tsRecord draws a TENSOR_SCALAR_ARITH record, its scalars inline or
// (now and then) read through a pointer into each partition.
func (g rowGen) tsRecord(sh shape, ch uint8) *Record {
	in, out := g.dtype(), g.dtype()
	ts := g.operands(sh, in, out)
	op0, op1 := rowTSOps[1+g.pick(len(rowTSOps)-1)], rowTSOps[g.pick(len(rowTSOps))]
	r := TensorScalar{Src: t3(ts[0]), Dst: t3(ts[1]), InDtype: in, OutDtype: out, Channels: ch, Op0: op0, Op1: op1,
		Reverse: RevOps(g.pick(4)), Imm0: rowSpecials[g.pick(len(rowSpecials))], Imm1: math.Float32bits(float32(g.rng.NormFloat64()))}
	if g.pick(4) == 0 {
		r.Imm0Src, r.Imm0 = ImmPtr, Addr(SBUF, 0, uint32(4*g.pick(rowActive/4)))
	}
	return NewTensorScalar(r)
}

// actRecord draws an ACTIVATE record of a function the hardware's
// tables stand for, with an accumulator command, its bias inline or
// (now and then) read through a pointer into each partition.
func (g rowGen) actRecord(sh shape, ch uint8) *Record {
	in, out := g.dtype(), g.dtype()
	ts := g.operands(sh, in, out)
	fns := []uint8{0x01, 0x02, 0x04, 0x05, 0x06, 0x07, 0x1F, 0x80, 0x81}
	a := Activate{BiasSrcN: 1, Src: t3(ts[0]), Dst: t3(ts[1]), InDtype: in, BiasDtype: DtypeFP32, OutDtype: out, Channels: ch,
		Func: fns[g.pick(len(fns))], AccumCmd: uint8(g.pick(4)), Scale: FP32(float32(g.rng.NormFloat64())),
		Bias: rowSpecials[g.pick(len(rowSpecials))], Imm: FP32(0.1)}
	if g.pick(3) == 0 {
		a.BiasSrcN, a.Bias = 0, Addr(SBUF, 0, uint32(4*g.pick(rowActive/4)))
	}
	return NewActivate(a)
}

// runRows runs rec on a DVE over memory filled from seed, by the fast
// path or the element walker only.
func runRows(t *testing.T, rec *Record, seed uint64, elementsOnly bool) (*OnChipMemory, *Sequencer, Result) {
	mem := NewOnChipMemory(rowActive)
	fillRows(t, mem, seed)
	s := New(Config{Engine: DVE, OnChip: mem, Gen: GenV4, elementsOnly: elementsOnly})
	return mem, s, s.Run(context.Background(), ImageProgram(Assemble(0x1000, rec, halt())))
}

// fastEligible is whether the fast path takes rec's operands.
func fastEligible(t *testing.T, rec *Record, mem OnChip) bool {
	r := &run{Sequencer: New(Config{Engine: DVE, OnChip: mem, Gen: GenV4})}
	var ts []Tensor4D
	var ds []Dtype
	var n int
	switch op := rec.Opcode(); op {
	case OpTensorTensor:
		tt := rec.TensorTensor()
		ts, ds, n = []Tensor4D{tt.Dst.t4(), tt.Src0.t4(), tt.Src1.t4()}, []Dtype{tt.OutDtype, tt.In0, tt.In1}, int(tt.Channels)
	case OpActivate:
		a := rec.Activate()
		ts, ds, n = []Tensor4D{a.Dst.t4(), a.Src.t4()}, []Dtype{a.OutDtype, a.InDtype}, int(a.Channels)
	case OpTensorScalar:
		s := rec.TensorScalar()
		ts, ds, n = []Tensor4D{s.Dst.t4(), s.Src.t4()}, []Dtype{s.OutDtype, s.InDtype}, int(s.Channels)
	default:
		s := rec.S4D4()
		ts, ds, n = []Tensor4D{s.Dst, s.Src}, []Dtype{s.OutDtype, s.InDtype}, int(s.Channels)
	}
	o := make([]operand, len(ts))
	if _, err := r.operands(n, mem, ts, ds, o); err != nil {
		t.Fatalf("%v: %v", rec.Opcode(), err)
	}
	if len(o) == 2 {
		return rowChunk(&o[0], &o[1]) != 0
	}
	return rowChunk(&o[0], &o[1], &o[2]) != 0
}

// checkRows runs one random record both ways; it reports whether the
// fast path took it.
func checkRows(t *testing.T, seed uint64) (fast bool) {
	rec := rowGen{rand.New(rand.NewPCG(seed, 1))}.record()
	m0, s0, r0 := runRows(t, rec, seed, false)
	m1, s1, r1 := runRows(t, rec, seed, true)
	if r0.State != Halted || r1.State != Halted {
		t.Fatalf("seed %d, %v: fast path %+v, element walker %+v", seed, rec.Opcode(), r0, r1)
	}
	for p := range rowParts {
		b0, _ := m0.Partition(SBUF, p, 0, rowActive, false)
		b1, _ := m1.Partition(SBUF, p, 0, rowActive, false)
		if i := firstDiff(b0, b1); i >= 0 {
			t.Fatalf("seed %d, %v %x: partition %d differs from byte %d: fast % x, walker % x", seed, rec.Opcode(), rec[:], p, i, b0[i:min(i+8, len(b0))], b1[i:min(i+8, len(b1))])
		}
	}
	if s0.act != nil {
		for p := range s0.act.acc {
			if a, b := math.Float32bits(s0.act.acc[p]), math.Float32bits(s1.act.acc[p]); a != b {
				t.Fatalf("seed %d: ACT accumulator %d: fast %#x, walker %#x", seed, p, a, b)
			}
		}
	}
	return fastEligible(t, rec, m0)
}

func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

// TestRowsMatchElements: many random records, most of them on the fast
// path, some left to the walker (strides, reversals, clobbering
// overlaps), all bit for bit the walker's.
func TestRowsMatchElements(t *testing.T) {
	fast, slow := 0, 0
	for seed := range uint64(800) {
		if checkRows(t, seed) {
			fast++
		} else {
			slow++
		}
	}
	if fast < 320 || slow < 80 {
		t.Fatalf("%d records on the fast path, %d on the walker: the generator no longer covers both", fast, slow)
	}
	t.Logf("%d on the fast path, %d on the walker", fast, slow)
}

// FuzzRows is TestRowsMatchElements from any seed.
func FuzzRows(f *testing.F) {
	f.Add(uint64(0))
	f.Fuzz(func(t *testing.T, seed uint64) { checkRows(t, seed) })
}

// TestRowChunk: which operands the fast path takes, and in what runs.
func TestRowChunk(t *testing.T) {
	op := func(start uint32, size uint32, step [4]int16, num [4]uint16) *operand {
		tt := Tensor4D{Start: start, Step: step, Num: num}
		lo, hi := tt.span()
		return &operand{t: tt, pl: place{g: SBUF, off: start, size: size, lo: uint32(int64(start) + lo*int64(size)), hi: uint32(int64(start) + (hi+1)*int64(size))}}
	}
	flat := [4]int16{1}
	cases := map[string]struct {
		dst, src *operand
		want     uint64
	}{
		"packed 4-D into flat":   {op(0, 4, flat, [4]uint16{240, 1, 1, 1}), op(0x400, 4, [4]int16{1, 8, 48, 0}, [4]uint16{8, 6, 5, 1}), 240},
		"padded rows":            {op(0, 4, flat, [4]uint16{240, 1, 1, 1}), op(0x400, 4, [4]int16{1, 10, 0, 0}, [4]uint16{8, 30, 1, 1}), 8},
		"rows of 12 and of 8":    {op(0, 2, [4]int16{1, 20}, [4]uint16{12, 10, 1, 1}), op(0x400, 4, [4]int16{1, 9}, [4]uint16{8, 15, 1, 1}), 0}, // 4 in common: too short
		"rows of 16 and of 24":   {op(0, 2, [4]int16{1, 20}, [4]uint16{16, 15, 1, 1}), op(0x400, 4, [4]int16{1, 30}, [4]uint16{24, 10, 1, 1}), 8},
		"broadcast rows":         {op(0, 4, flat, [4]uint16{64, 1, 1, 1}), op(0x400, 4, [4]int16{1, 0}, [4]uint16{16, 4, 1, 1}), 16},
		"a stride of 2":          {op(0, 4, flat, [4]uint16{64, 1, 1, 1}), op(0x400, 4, [4]int16{2}, [4]uint16{64, 1, 1, 1}), 0},
		"backwards":              {op(0, 4, flat, [4]uint16{64, 1, 1, 1}), op(0x400, 4, [4]int16{-1}, [4]uint16{64, 1, 1, 1}), 0},
		"in place":               {op(0x100, 4, flat, [4]uint16{64, 1, 1, 1}), op(0x100, 4, flat, [4]uint16{64, 1, 1, 1}), 64},
		"one element on":         {op(0x104, 4, flat, [4]uint16{64, 1, 1, 1}), op(0x100, 4, flat, [4]uint16{64, 1, 1, 1}), 0},
		"in place, halved dtype": {op(0x100, 2, flat, [4]uint16{64, 1, 1, 1}), op(0x100, 4, flat, [4]uint16{64, 1, 1, 1}), 0},
		"apart":                  {op(0x200, 4, flat, [4]uint16{64, 1, 1, 1}), op(0x100, 4, flat, [4]uint16{64, 1, 1, 1}), 64},
	}
	for name, c := range cases {
		if got := rowChunk(c.dst, c.src); got != c.want {
			t.Errorf("%s: chunk %d, want %d", name, got, c.want)
		}
	}
	other := *cases["padded rows"].src
	other.pl.p0 = 1 // the same bytes of other partitions
	if rowChunk(&other, cases["padded rows"].src) == 0 {
		t.Error("operands on other partitions taken as overlapping")
	}
}
