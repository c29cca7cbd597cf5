package seq

import "fmt"

// The register ALU and the branch compare: 32-bit registers, a 64-bit
// operand taking the hi register of a pair for the 64-bit dtypes.

func (r *run) reg(lo, hi uint8, d Dtype) uint64 {
	v := uint64(r.regs[lo])
	if d.wide() {
		v |= uint64(r.regs[hi]) << 32
	}
	return v
}

// signed widens a register value of dtype d to compare as a signed or
// unsigned number.
func signed(d Dtype) bool { return d == DtypeInt32 || d == DtypeInt64 }

func asInt(v uint64, d Dtype) int64 {
	if d.wide() {
		return int64(v)
	}
	return int64(int32(v))
}

func (r *run) alu(a ALU) error {
	switch a.Dtype {
	case DtypeInt32, DtypeUint32, DtypeInt64, DtypeUint64:
	default:
		return fmt.Errorf("%w: CTRL_AL dtype %d", ErrUnsupported, a.Dtype)
	}
	x := r.reg(a.Src0Lo, a.Src0Hi, a.Dtype)
	y := a.Imm
	if !a.Src1Imm {
		y = r.reg(a.Src1Lo, a.Src1Hi, a.Dtype)
	}
	var z uint64
	switch a.Op {
	case ALUAdd:
		z = x + y
	case ALUSub:
		z = x - y
	case ALUMult:
		z = x * y
	case ALUMax, ALUMin:
		less := x < y
		if signed(a.Dtype) {
			less = asInt(x, a.Dtype) < asInt(y, a.Dtype)
		}
		z = x
		if less == (a.Op == ALUMax) {
			z = y
		}
	default:
		return fmt.Errorf("%w: CTRL_AL op %d", ErrUnsupported, a.Op)
	}
	r.regs[a.DstLo] = uint32(z)
	if a.Dtype.wide() {
		r.regs[a.DstHi] = uint32(z >> 32)
	}
	return nil
}

// cmps are the compares by their immediate code.
var cmps = [7]func(x, y int64) bool{
	BranchAlways: func(x, y int64) bool { return true },
	BranchLT:     func(x, y int64) bool { return x < y },
	BranchLE:     func(x, y int64) bool { return x <= y },
	BranchEQ:     func(x, y int64) bool { return x == y },
	BranchNE:     func(x, y int64) bool { return x != y },
	BranchGE:     func(x, y int64) bool { return x >= y },
	BranchGT:     func(x, y int64) bool { return x > y },
}

// branch returns where execution goes after b at pc: its target when
// taken (which must be a record of the image), else the next record.
func (r *run) branch(pc uint64, b Branch) (uint64, error) {
	cmp, viaReg := b.Cmp, false
	if cmp >= BranchCmpReg && cmp != BranchAlways {
		cmp, viaReg = cmp-BranchCmpReg, true
	}
	if int(cmp) >= len(cmps) || (viaReg && cmp == BranchAlways) {
		return 0, fmt.Errorf("%w: CTRL_BR compare %d", ErrUnsupported, b.Cmp)
	}
	if cmp != BranchAlways {
		x, y := r.reg(b.Reg0, b.Reg0+1, b.Dtype), uint64(b.Imm)
		if viaReg {
			y = r.reg(b.Reg1, b.Reg1+1, b.Dtype)
		}
		var taken bool
		if signed(b.Dtype) {
			taken = cmps[cmp](asInt(x, b.Dtype), asInt(y, b.Dtype))
		} else {
			taken = ucmp(cmp, x, y)
		}
		if !taken {
			return pc + RecordSize, nil
		}
	}
	var target uint64
	switch b.Mode {
	case TargetRelImm:
		target = pc + uint64(int64(b.Rel))
	case TargetRelRegister:
		target = pc + uint64(int64(int32(r.regs[b.TargetLo])))
	case TargetRegister:
		target = uint64(r.regs[b.TargetLo]) | uint64(r.regs[b.TargetHi])<<32
	default:
		return 0, fmt.Errorf("%w: CTRL_BR target mode %d", ErrUnsupported, b.Mode)
	}
	if target < r.p.Lo || target >= r.p.Hi || r.p.Hi-target < RecordSize || (target-r.p.Lo)%RecordSize != 0 {
		return 0, fmt.Errorf("%w: %#x not a record of [%#x, %#x)", ErrBranchTarget, target, r.p.Lo, r.p.Hi)
	}
	return target, nil
}

// ucmp compares unsigned values; the signed table would misorder values
// at or above 1<<63.
func ucmp(c BranchCmp, x, y uint64) bool {
	switch c {
	case BranchLT:
		return x < y
	case BranchLE:
		return x <= y
	case BranchEQ:
		return x == y
	case BranchNE:
		return x != y
	case BranchGE:
		return x >= y
	case BranchGT:
		return x > y
	}
	return true
}
