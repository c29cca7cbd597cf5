package seq

// The PE records' layouts move between generations (59768285956 §2.4,
// 59686003097): one table per generation, data rather than code. An
// offset of -1 is a field the generation does not have.

// Generation is the NeuronCore generation whose record layouts a core's
// engines use.
type Generation uint8

const (
	GenV2 Generation = 2 // SUNDA: Trn1, Inf2
	GenV3 Generation = 3 // CAYMAN: Trn2
	GenV4 Generation = 4 // MARIANA: Trn3
)

// DefaultGeneration is the layout a Config without one uses.
const DefaultGeneration = GenV3

// peLayout places the fields of S3D3_MM (MATMUL) and S3_LW (LDWEIGHTS).
type peLayout struct {
	// MATMUL.
	mmSrc, mmInDtype, mmFP32Mode, mmTranspose, mmPerfOpt    int
	mmOutDtype, mmFlags, mmAccum, mmRowGrp, mmColGrp, mmDst int
	mmZeroRegion                                            int
	// mmOuts are the output dtypes the validators admit (0 is fp32).
	mmOuts []Dtype
	// LDWEIGHTS.
	lwSrc, lwInDtype, lwTranspose, lwPerfOpt, lwRows, lwCols int
	lwRowGrp, lwColGrp, lwBgXpose, lwFlags                   int
}

var peLayouts = map[Generation]*peLayout{
	GenV2: {
		mmSrc: 16, mmInDtype: 32, mmFP32Mode: 33, mmTranspose: -1, mmPerfOpt: 35,
		mmOutDtype: -1, mmFlags: -1, mmAccum: 43, mmRowGrp: 44, mmColGrp: 45, mmDst: 48,
		mmZeroRegion: 47, mmOuts: []Dtype{0},
		lwSrc: 16, lwInDtype: 32, lwTranspose: -1, lwPerfOpt: 35, lwRows: 38, lwCols: 39,
		lwRowGrp: 44, lwColGrp: 45, lwBgXpose: -1, lwFlags: -1,
	},
	GenV3: {
		mmSrc: 16, mmInDtype: 32, mmFP32Mode: 33, mmTranspose: 34, mmPerfOpt: 35,
		mmOutDtype: 40, mmFlags: -1, mmAccum: 43, mmRowGrp: 44, mmColGrp: 45, mmDst: 48,
		mmZeroRegion: 47, mmOuts: []Dtype{0, DtypeFP32},
		lwSrc: 16, lwInDtype: 32, lwTranspose: 34, lwPerfOpt: 35, lwRows: 38, lwCols: 39,
		lwRowGrp: 44, lwColGrp: 45, lwBgXpose: -1, lwFlags: -1,
	},
	GenV4: {
		mmSrc: 16, mmInDtype: 32, mmFP32Mode: 33, mmTranspose: 34, mmPerfOpt: 35,
		mmOutDtype: 40, mmFlags: 42, mmAccum: 43, mmRowGrp: 44, mmColGrp: 45, mmDst: 48,
		mmZeroRegion: 47, mmOuts: []Dtype{0, DtypeFP32, DtypeBF16},
		lwSrc: 16, lwInDtype: 32, lwTranspose: 34, lwPerfOpt: 35, lwRows: 38, lwCols: 39,
		lwRowGrp: 44, lwColGrp: 45, lwBgXpose: 12, lwFlags: 47,
	},
}

// byteAt is r's byte at off, 0 for a field the generation lacks.
func (r *Record) byteAt(off int) uint8 {
	if off < 0 {
		return 0
	}
	return r[off]
}

func (r *Record) setByteAt(off int, v uint8) {
	if off >= 0 {
		r[off] = v
	}
}
