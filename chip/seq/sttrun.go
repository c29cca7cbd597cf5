package seq

// stt runs SCALAR_TENSOR_TENSOR (arith or bitvec) and TENSOR_TENSOR_SCAN.
func (r *run) stt(rec *Record) (skipped string, stopped bool, err error) {
	op := rec.Opcode()
	s := rec.STT()
	mem := r.cfg.OnChip
	if mem == nil {
		return "no on-chip memory", false, nil
	}
	if err := s.valid(op, r.generation()); err != nil {
		return "", false, err
	}
	n := int(s.Channels)
	var o [3]operand
	ok, err := r.operands(n, mem, []Tensor4D{s.Src0.t4(), s.Src1.t4(), s.Dst.t4()}, []Dtype{s.In0, s.In1, s.OutDtype}, o[:])
	if err == nil {
		err = psumWrite(o[2], s.OutDtype)
	}
	var sc scalar
	if err == nil {
		err = r.resolveScalarOf(&sc, s.Imm0Src, s.Imm0, s.ImmDtype, n, mem)
	}
	switch {
	case err != nil:
		return "", false, err
	case !ok:
		return "indirect address", false, nil
	}
	if why := s.notEmulated(op); why != "" {
		return why, false, nil
	}
	var serr error
	var f func(p int, d, a, b []byte)
	var acc *accumulator
	switch op {
	case OpSTTBitvec:
		f = s.bitsElem(mem, sc, &serr)
	case OpTensorTensorScan:
		f = s.scanElem(mem, sc, &serr)
	default:
		if r.act == nil {
			r.act = new(actState)
		}
		acc = &accumulator{st: r.act, cmd: s.AccumCmd, lane: o[0].pl.p0, last: -1}
		f = s.arithElem(mem, sc, acc, &serr)
	}
	stopped, err = r.zip(n, mem, &o[2], &o[0], &o[1], f)
	if acc != nil && err == nil && !stopped {
		acc.flush()
	}
	if err == nil {
		err = serr
	}
	return "", stopped, err
}

// stages applies op0 with the scalar, then op1 with the second tensor,
// in fp32; a bypassed op passes the tensor side on.
func (s *STT) stages() func(a, k, b float32) float32 {
	op0, op1 := tsOps[s.Op0].f, tsOps[s.Op1].f
	rev0 := s.Reverse == RevFirst || s.Reverse == RevBoth
	rev1 := s.Reverse == RevSecond || s.Reverse == RevBoth
	by0, by1 := s.Op0 == ALUBypass, s.Op1 == ALUBypass
	return func(a, k, b float32) float32 {
		switch {
		case by0:
		case rev0:
			a = op0(k, a)
		default:
			a = op0(a, k)
		}
		switch {
		case by1:
		case rev1:
			a = op1(b, a)
		default:
			a = op1(a, b)
		}
		return a
	}
}

// perPartition reads the scalar once per partition; its error lands in
// *serr.
func perPartition[T any](at func(p int) (T, error), serr *error) func(p int) T {
	last := -1
	var v T
	return func(p int) T {
		if p != last {
			last = p
			var err error
			if v, err = at(p); err != nil && *serr == nil {
				*serr = err
			}
		}
		return v
	}
}

// arithElem computes an element, writes it, and folds it into the DVE
// accumulator per partition when the command asks (G-DV6).
func (s *STT) arithElem(mem OnChip, sc scalar, acc *accumulator, serr *error) func(p int, d, a, b []byte) {
	in0, in1, out := dtypes[s.In0].load, dtypes[s.In1].load, dtypes[s.OutDtype].store
	k := perPartition(func(p int) (float32, error) { return sc.at(mem, p) }, serr)
	f := s.stages()
	return func(p int, d, a, b []byte) {
		if p != acc.last {
			acc.flush()
			acc.last, acc.sum = p, 0
		}
		y := f(in0(a), k(p), in1(b))
		acc.sum += y
		out(d, y)
	}
}

// scanElem carries r along each partition: r = (src0 op0 r) op1 src1,
// from the scalar (G-DV5).
func (s *STT) scanElem(mem OnChip, sc scalar, serr *error) func(p int, d, a, b []byte) {
	in0, in1, out := dtypes[s.In0].load, dtypes[s.In1].load, dtypes[s.OutDtype].store
	op0, op1 := tsOps[s.Op0].f, tsOps[s.Op1].f
	by0, by1 := s.Op0 == ALUBypass, s.Op1 == ALUBypass
	last := -1
	var acc float32
	return func(p int, d, a, b []byte) {
		if p != last {
			last = p
			var err error
			if acc, err = sc.at(mem, p); err != nil && *serr == nil {
				*serr = err
			}
		}
		if x := in0(a); !by0 {
			acc = op0(x, acc)
		} else {
			acc = x
		}
		if !by1 {
			acc = op1(acc, in1(b))
		}
		out(d, acc)
	}
}

func (s *STT) bitsElem(mem OnChip, sc scalar, serr *error) func(p int, d, a, b []byte) {
	w, sgn := dtypes[s.OutDtype].size, signedInt(s.OutDtype)
	rev0 := s.Reverse == RevFirst || s.Reverse == RevBoth
	rev1 := s.Reverse == RevSecond || s.Reverse == RevBoth
	apply := func(op ALUOp, x, y uint64, rev bool) uint64 {
		switch {
		case op == ALUBypass:
			return x
		case rev:
			return bitvec(op, y, x, w, sgn)
		}
		return bitvec(op, x, y, w, sgn)
	}
	k := perPartition(func(p int) (uint64, error) { return sc.bitsAt(mem, p, w) }, serr)
	return func(p int, d, a, b []byte) {
		x := apply(s.Op0, loadBits(a, w), k(p), rev0)
		storeBits(d, w, apply(s.Op1, x, loadBits(b, w), rev1))
	}
}
