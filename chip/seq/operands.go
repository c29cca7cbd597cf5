package seq

// The operands of the interpreted records, and builders that lay them
// out (for tests, fixtures and the chip's own programs).

// BranchCmp is CTRL_BR's compare.
type BranchCmp uint8

// The compares with immediates; the register forms are 8 above
// (BranchCmpReg). Only EQ (3) and GT (6) are documented; the rest of the
// order is a guess (docs/isa.md).
const (
	BranchAlways BranchCmp = 0
	BranchLT     BranchCmp = 1
	BranchLE     BranchCmp = 2
	BranchEQ     BranchCmp = 3
	BranchNE     BranchCmp = 4
	BranchGE     BranchCmp = 5
	BranchGT     BranchCmp = 6
	BranchCmpReg BranchCmp = 8 // added to an immediate compare
)

// TargetMode is how CTRL_BR names its target.
type TargetMode uint8

const (
	TargetRegister    TargetMode = 1 // an absolute address in a register pair
	TargetRelImm      TargetMode = 3 // br_immediate bytes from this record
	TargetRelRegister TargetMode = 4 // a register's value bytes from this record
)

// Branch is a decoded CTRL_BR.
type Branch struct {
	Cmp                BranchCmp
	Dtype              Dtype
	Mode               TargetMode
	Imm                uint32
	Reg0, Reg1         uint8
	TargetLo, TargetHi uint8
	Rel                int32 // bytes from the branch record
}

// Branch decodes r as CTRL_BR.
func (r *Record) Branch() Branch {
	return Branch{
		Cmp: BranchCmp(r[offBRCmp]), Dtype: Dtype(r[offBRDtype]), Mode: TargetMode(r[offBRMode]),
		Imm: r.u32(offBRImm), Reg0: r[offBRReg0], Reg1: r[offBRReg1],
		TargetLo: r[offBRTargetLo], TargetHi: r[offBRTargetHi],
		Rel: int32(r.u32(offBRRel)),
	}
}

// NewBranch returns a relative branch rel bytes from itself, taken when
// reg0 cmp imm holds (BranchAlways: always).
func NewBranch(cmp BranchCmp, reg0 uint8, imm uint32, rel int32) *Record {
	r := NewRecord(OpCtrlBR)
	r[offBRCmp], r[offBRDtype], r[offBRMode], r[offBRReg0] = byte(cmp), byte(DtypeInt32), byte(TargetRelImm), reg0
	r.put32(offBRImm, imm)
	r.put64(offBRRel, uint64(uint32(rel))) // zero-extended, as the builders store it
	return r
}

// ALUOp is CTRL_AL's operation.
type ALUOp uint8

const (
	ALUAdd  ALUOp = 4
	ALUSub  ALUOp = 5
	ALUMult ALUOp = 6
	ALUMax  ALUOp = 8
	ALUMin  ALUOp = 9
)

// ALU is a decoded CTRL_AL.
type ALU struct {
	Op             ALUOp
	Dtype          Dtype
	Src1Imm        bool
	Src0Lo, Src0Hi uint8
	Src1Lo, Src1Hi uint8
	DstLo, DstHi   uint8
	Imm            uint64
}

// ALU decodes r as CTRL_AL.
func (r *Record) ALU() ALU {
	return ALU{
		Op: ALUOp(r[offALOp]), Dtype: Dtype(r[offALDtype]), Src1Imm: r[offALSrc1Src] == 1,
		Src0Lo: r[offALSrc0Lo], Src0Hi: r[offALSrc0Hi], Src1Lo: r[offALSrc1Lo], Src1Hi: r[offALSrc1Hi],
		DstLo: r[offALDstLo], DstHi: r[offALDstHi], Imm: r.u64(offALImm),
	}
}

// NewALUImm returns dst = src0 op imm on 32-bit registers.
func NewALUImm(op ALUOp, dst, src0 uint8, imm uint32) *Record {
	r := NewRecord(OpCtrlAL)
	r[offALOp], r[offALDtype], r[offALSrc1Src] = byte(op), byte(DtypeInt32), 1
	r[offALSrc0Lo], r[offALDstLo] = src0, dst
	r.put64(offALImm, uint64(imm))
	return r
}

// CSRWrite is a decoded CTRL_WR.
type CSRWrite struct {
	Size  uint8 // bytes; the runtime writes 4
	Addr  uint64
	Value uint32
}

// CSRWrite decodes r as CTRL_WR.
func (r *Record) CSRWrite() CSRWrite {
	return CSRWrite{Size: r[offWRSize], Addr: r.u64(offWRAddr), Value: r.u32(offWRValue)}
}

// NewCSRWrite returns a 4-byte write of v to the CSR at addr.
func NewCSRWrite(addr uint64, v uint32) *Record {
	r := NewRecord(OpCtrlWR)
	r[offWRSize] = 4
	r.put64(offWRAddr, addr)
	r.put32(offWRValue, v)
	return r
}

// NotifyHintExt is NOTIFY's debug_hint_extended: the subtype an
// INFER_STATUS record carries (2 START, 3 END, 6 CUSTOM).
func (r *Record) NotifyHintExt() uint16 {
	return uint16(r[offNotifyHintExt]) | uint16(r[offNotifyHintExt+1])<<8
}

// NewNotify returns an explicit notification with the given hints, as
// the runtime's add_notify(hint, ext) builds it.
func NewNotify(hint uint8, ext uint16) *Record {
	r := NewRecord(OpNotify)
	r[offDebugHint] = hint
	r[offNotifyHintExt], r[offNotifyHintExt+1] = byte(ext), byte(ext>>8)
	return r
}

// NewSemUpdate returns a CTRL_ES record that applies mode to semaphore
// idx with v once it ran, as add_semaphore_inc_val does.
func NewSemUpdate(mode UpdateMode, idx uint8, v uint32) *Record {
	r := NewRecord(OpCtrlES)
	r.SetESEvents(Events{UpdateMode: mode, UpdateIdx: idx, UpdateValue: v})
	return r
}

// NewWait returns a NOP that waits for mode on idx against v.
func NewWait(mode WaitMode, idx uint8, v uint32) *Record {
	r := NewRecord(OpNop)
	r.SetEvents(Events{WaitMode: mode, WaitIdx: idx, WaitValue: v})
	return r
}
