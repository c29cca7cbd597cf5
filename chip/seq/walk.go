package seq

import "fmt"

// The machinery the element-wise records share: operands resolved
// against the on-chip memory, and a walk of a destination pattern in
// step with its sources, partition by partition, that looks at the run's
// stop signal every checkEvery elements and allocates nothing per
// element.

// operand is a pattern resolved against the on-chip memory.
type operand struct {
	t  Tensor4D
	pl place
}

// operands resolves ts (each of the dtype at the same index) on n
// partitions; emulated is false when one of them uses an address form
// this package does not follow.
func (r *run) operands(n int, mem OnChip, ts []Tensor4D, ds []Dtype, out []operand) (emulated bool, err error) {
	emulated = true
	for i, t := range ts {
		pl, ok, err := r.placeTensor(t, ds[i], n, mem)
		if err != nil {
			return false, err
		}
		emulated = emulated && ok
		out[i] = operand{t: t, pl: pl}
	}
	return emulated, nil
}

// psumWrite checks the rule that a write to PSUM is of a 4-byte dtype.
func psumWrite(o operand, d Dtype) error {
	if o.pl.g == PSUM && o.pl.size != 4 {
		return fmt.Errorf("%w: a %v write to PSUM", ErrOperand, d)
	}
	return nil
}

// ticker counts elements between looks at the run's stop signal.
type ticker struct {
	r    *run
	left int
}

func (r *run) ticker() ticker { return ticker{r: r, left: checkEvery} }

// tick counts one element; true when the run was stopped.
func (t *ticker) tick() bool {
	if t.left--; t.left > 0 {
		return false
	}
	t.left = checkEvery
	return t.r.stopped()
}

// zip walks dst and the sources (none, one or two; nil when absent) in
// step on each of n partitions, calling f with the bytes at each
// element: d, a and b start at the element. p is the partition's index
// in the record (0..n-1). It reports whether the run was stopped.
func (r *run) zip(n int, mem OnChip, dst *operand, s0, s1 *operand, f func(p int, d, a, b []byte)) (stopped bool, err error) {
	tk := r.ticker()
	count := dst.t.elems()
	var sb0, sb1 []byte
	var c0, c1 cursor
	for p := range n {
		db, err := dst.pl.part(mem, p, true)
		if err != nil {
			return false, err
		}
		if s0 != nil {
			if sb0, err = s0.pl.part(mem, p, false); err != nil {
				return false, err
			}
			c0 = newCursor(s0.t, s0.pl)
		}
		if s1 != nil {
			if sb1, err = s1.pl.part(mem, p, false); err != nil {
				return false, err
			}
			c1 = newCursor(s1.t, s1.pl)
		}
		dc := newCursor(dst.t, dst.pl)
		var a, b []byte
		for range count {
			if tk.tick() {
				return true, nil
			}
			if s0 != nil {
				a = sb0[c0.off:]
				c0.next()
			}
			if s1 != nil {
				b = sb1[c1.off:]
				c1.next()
			}
			f(p, db[dc.off:], a, b)
			dc.next()
		}
	}
	return false, nil
}

// validDtypes is the validators' channel and dtype rules the element-wise
// records share: 1..128 partitions, every input dtype valid and not
// FP32R (nor 64-bit where wide is false), the output dtype valid.
func validDtypes(channels uint8, out Dtype, wide bool, ins ...Dtype) error {
	if channels == 0 || channels > Partitions {
		return fmt.Errorf("%w: %d active channels", ErrOperand, channels)
	}
	for _, d := range ins {
		if _, ok := d.info(); !ok || d == DtypeFP32R || (!wide && d.wide()) {
			return fmt.Errorf("%w: input dtype %v", ErrOperand, d)
		}
	}
	if _, ok := out.info(); !ok || (!wide && out.wide()) {
		return fmt.Errorf("%w: output dtype %v", ErrOperand, out)
	}
	return nil
}
