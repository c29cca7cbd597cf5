package ioctl

import "reflect"

// The driver versions neuronfs emulates. Their commands and structs are
// data (abi/versions/<version>/, generated into versionDeltas): a
// version is its parent plus what it adds or changes, minus what it
// removes. What each version reports about itself and how its handlers
// behave differently is below, also inherited along the tree, field by
// field: a version states only what it changes.

// Architecture enums, as DEVICE_BASIC_INFO reports them.
const (
	archV2 = 2
	archV3 = 3
	archV4 = 4
)

// Feature bits of DRIVER_INFO_GET.feature_flags1, in the order drivers
// added them.
const (
	FeatureDMABuf = 1 << iota
	FeatureAsyncDMA
	FeatureBatchDMAQueueInit
	FeatureBigCoreMaps
	FeatureMemAllocType
	FeatureHBMScrub
	FeatureMemAlloc64
	FeatureContiguousScratchpad
	FeatureZeroCopy
	FeaturePinnedHostMem
	FeatureAllocWithPA
	FeatureAsyncIO
)

// Quirks are the behaviour changes of a version that handlers ask about.
// Each is a way some versions depart from the base version (2.25.4.0,
// which has none); a version has its parent's quirks plus those it turns
// on in facts, so a quirk holds for the whole subtree below the version
// that states it. Where each starts is facts; the comments say what the
// base version does instead.
type Quirks struct {
	// FWFailIsError: a register-protocol request the firmware answered
	// with a failure returns -1 (the base returns 0).
	FWFailIsError bool
	// AsyncCompletionQueues: driver h2t copy queues carry an async
	// completion queue.
	AsyncCompletionQueues bool
	// BARReadChecked: BAR_READ refuses addresses outside BAR0 with
	// EINVAL before reading (the base reads wherever it is told).
	BARReadChecked bool
	// CopyInEFAULT: a failed copy of the argument (or of memory it points
	// to) from the caller is EFAULT, not the positive not-copied count.
	CopyInEFAULT bool
	// HandleErrnos: the memory commands answer ENOENT for an unknown
	// handle and E2BIG for an access outside the chunk (the base: EINVAL).
	HandleErrnos bool
	// NCMapV1: GET_LOGICAL_TO_PHYSICAL_NC_MAP takes mapping version 1 on
	// V3, the map without the UltraServer die flip.
	NCMapV1 bool
	// FWBuildAttr: core_count and connected_devices are world-readable
	// (the version also adds fw_build; that attribute is not emulated).
	FWBuildAttr bool
	// DMABufChecks: DMABUF_FD refuses a NULL fd pointer and an unaligned
	// va with EINVAL before exporting.
	DMABufChecks bool
	// MarkSizeENXIO: CRWL_NC_RANGE_MARK answers ENXIO to a size that is
	// neither of its forms (the base: EINVAL).
	MarkSizeENXIO bool
}

// with returns q with the quirks more turns on turned on too. Quirks has
// only bool fields (TestQuirksAreFlags), so this needs no list of them.
func (q Quirks) with(more Quirks) Quirks {
	dst, src := reflect.ValueOf(&q).Elem(), reflect.ValueOf(more)
	for i := range dst.NumField() {
		if src.Field(i).Bool() {
			dst.Field(i).SetBool(true)
		}
	}
	return q
}

// versionFacts is what a version says about itself, field by field: a
// zero field is the parent's, so a version states only what it changes.
type versionFacts struct {
	// Features is DRIVER_INFO_GET's feature_flags1.
	Features uint64
	// ArchFeatures overrides Features for some architectures.
	ArchFeatures map[uint32]uint64
	// Compat is COMPATIBLE_VERSION's {min, max} per architecture.
	Compat map[uint32][2]uint32
	// Quirks the version turns on, on top of its parent's.
	Quirks Quirks
}

// facts is the one table of what versions report and how they behave; a
// version missing here is its parent in all but its commands.
var facts = map[string]versionFacts{
	"2.25.4.0": {Features: 0x1ff, Compat: map[uint32][2]uint32{archV2: {5, 7}, archV3: {10, 11}, archV4: {10, 11}}},
	// Five new commands: throttling notifications, VA placement, the
	// performance-profile queries, async h2t completion queues.
	"2.27.4.0": {Quirks: Quirks{FWFailIsError: true, AsyncCompletionQueues: true, BARReadChecked: true}},
	// Pinned host memory and allocation with the PA.
	"2.28.0.0": {Features: 0x7ff, Quirks: Quirks{FWBuildAttr: true}},
	// The 64-byte zero copy, dma-buf v2; async IO where zero copy is.
	"2.29.0.0": {Features: 0xfff, ArchFeatures: map[uint32]uint64{archV2: 0x7ff},
		Quirks: Quirks{CopyInEFAULT: true, HandleErrnos: true, NCMapV1: true, DMABufChecks: true, MarkSizeENXIO: true}},
	// Before Trn3: no h2t queue, power-profile, metrics-control or batched
	// zero-copy commands; zero copy took the 40-byte struct.
	"2.24.7.0": {Features: 0xff, Compat: map[uint32][2]uint32{archV2: {5, 7}, archV3: {10, 11}}},
	// Before the experimental zero copy and the contiguous scratchpad.
	"2.23.9.0": {Features: 0x7f},
	// 2.22.2.0, before UltraServer modes (no POD_STATUS_V2 / POD_CTRL_V2),
	// says what 2.23.9.0 says.
	// The same ABI; Trn2 runtimes were accepted at API level 10 only.
	"2.20.28.0": {Compat: map[uint32][2]uint32{archV2: {5, 7}, archV3: {10, 10}}},
}

// DefaultVersion is the driver version emulated unless asked otherwise.
const DefaultVersion = "2.25.4.0"
