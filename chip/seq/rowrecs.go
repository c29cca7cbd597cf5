package seq

// The records' row kernels (rows.go): what each element-wise record does
// to a piece of contiguous elements, built once per record.

// ttRows is TENSOR_TENSOR arithmetic's: z = src0 op src1.
func (r *run) ttRows(tt *TensorTensor) rowKernel {
	sc := r.scratch()
	in0, in1, out, op := tt.In0, tt.In1, tt.OutDtype, tt.Op
	store := dtypes[out].store
	return func(_ int, d, a, b []byte, m int) {
		x := rowIn(in0, a, sc[0][:m])
		y := rowIn(in1, b, sc[1][:m])
		z, inPlace := rowOut(out, d, sc[2][:m])
		binRow(op, z, x, y)
		if !inPlace {
			rowStore(out, store, d, z)
		}
	}
}

// tsRows is TENSOR_SCALAR_ARITH's: (x op0 s0) op1 s1, the scalars read as
// each partition starts.
func (r *run) tsRows(ts *TensorScalar, s0, s1 scalar, mem OnChip) (rowKernel, func(p int) error) {
	sc := r.scratch()
	var a0, a1 float32
	start := func(p int) (err error) {
		if a0, err = s0.at(mem, p); err == nil {
			a1, err = s1.at(mem, p)
		}
		return err
	}
	in, out, op0, op1 := ts.InDtype, ts.OutDtype, ts.Op0, ts.Op1
	rev0 := ts.Reverse == RevFirst || ts.Reverse == RevBoth
	rev1 := ts.Reverse == RevSecond || ts.Reverse == RevBoth
	store := dtypes[out].store
	k := func(_ int, d, a, _ []byte, m int) {
		x := rowIn(in, a, sc[0][:m])
		z, inPlace := rowOut(out, d, sc[2][:m])
		scalarRow(op0, rev0, z, x, a0)
		scalarRow(op1, rev1, z, z, a1)
		if !inPlace {
			rowStore(out, store, d, z)
		}
	}
	return k, start
}

// moveRows is COPY's (the bytes: source and destination are one pattern
// or apart, rowChunk saw to it), CAST's and RECIPROCAL's.
func (r *run) moveRows(op Opcode, s *S4D4, store func([]byte, float32)) rowKernel {
	if op == OpCopy {
		return func(_ int, d, a, _ []byte, _ int) { copy(d, a) }
	}
	sc := r.scratch()
	in, out := s.InDtype, s.OutDtype
	if op == OpCast {
		return func(_ int, d, a, _ []byte, m int) { rowStore(out, store, d, rowIn(in, a, sc[0][:m])) }
	}
	return func(_ int, d, a, _ []byte, m int) {
		x := rowIn(in, a, sc[0][:m])
		z, inPlace := rowOut(out, d, sc[2][:m])
		x = x[:len(z)]
		for i := range z {
			z[i] = 1 / x[i]
		}
		if !inPlace {
			rowStore(out, store, d, z)
		}
	}
}

// actRows is ACTIVATE's: f(scale·x + bias), summed into the partition's
// accumulator in element order as the walker sums.
func (r *run) actRows(a *Activate, ap *actPart) rowKernel {
	sc := r.scratch()
	f := actFuncs[a.Func].f
	in, out := a.InDtype, a.OutDtype
	store := dtypes[out].store
	return func(_ int, d, b, _ []byte, m int) {
		x := rowIn(in, b, sc[0][:m])
		z, inPlace := rowOut(out, d, sc[2][:m])
		x = x[:len(z)]
		for i := range z {
			y := ap.apply(f, x[i])
			ap.acc.sum += y
			z[i] = y
		}
		if !inPlace {
			rowStore(out, store, d, z)
		}
	}
}
