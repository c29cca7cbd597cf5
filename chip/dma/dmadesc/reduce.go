package dmadesc

// Reductions in the engine (package dma). A TX descriptor's meta_ctrl can make the SDMA
// engine compute while it copies: the known op words are add/min-max
// 0x2000000, fma 0x2100000, CCE-ext 0x2400000 and gradient 0x2500000
// (bits 25:20); the meaning of the bits below is not public. neuronfs
// pins this convention, every part of it a guess [GUESS]:
//
//   - class (bits 25:20) 0x20 is a reduction; its CCE type sits in bits
//     17:16 (the SDMA_CCETYPE numbering: ADD 0, MAX 2, MIN 3) and its
//     element type in bits 12:8 (the instruction-set dtype numbering);
//   - a reduction combines into the destination: dst = op(dst, src),
//     element by element (what a ring reduce-scatter step needs);
//   - FMA (type 1, or class 0x21), EXT and gradient are not emulated and,
//     like an unknown element type, copy as the default op does.
const (
	metaClassShift   = 20
	metaClassMask    = 0x3f << metaClassShift
	metaClassReduce  = 0x20
	metaCCEShift     = 16
	metaCCEMask      = 3 << metaCCEShift
	metaDtypeShift   = 8
	metaDtypeMask    = 0x1f << metaDtypeShift
	metaFirstAndLast = 3 // first and last block, as in MetaDefault
)

// CCE types (SDMA_CCETYPE).
const (
	CCEAdd = 0
	CCEMax = 2
	CCEMin = 3
)

// Element types (the instruction-set dtype enum) a reduction handles.
const (
	DtypeInt8   = 2
	DtypeUint8  = 3
	DtypeInt16  = 4
	DtypeUint16 = 5
	DtypeBF16   = 6
	DtypeFP16   = 7
	DtypeInt32  = 8
	DtypeUint32 = 9
	DtypeFP32   = 10
)

// ReduceMeta is the meta_ctrl word of a TX descriptor that reduces with
// cce over elements of dtype.
func ReduceMeta(cce, dtype uint32) uint32 {
	return metaClassReduce<<metaClassShift | cce<<metaCCEShift&metaCCEMask | dtype<<metaDtypeShift&metaDtypeMask | metaFirstAndLast
}

// ReduceOf decodes a TX meta_ctrl word: the CCE type and element type of
// a reduction, or ok false for any other class.
func ReduceOf(meta uint32) (cce, dtype uint32, ok bool) {
	if meta&metaClassMask>>metaClassShift != metaClassReduce {
		return 0, 0, false
	}
	return meta & metaCCEMask >> metaCCEShift, meta & metaDtypeMask >> metaDtypeShift, true
}
