package ioctl

import "reflect"

// The driver versions neuronfs emulates, as a tree rooted at 2.25.4.0,
// which is generated from the reference tables: each older one is its
// successor minus what it did not have yet (reference: abi-diff.md), and
// 2.27.4.0 is 2.25.4.0 plus its five new commands.

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
)

// CmdMemBufZerocopy64V1 is the 2.24-era MEM_BUF_ZEROCOPY64, over the
// 40-byte neuron_ioctl_mem_buf_copy64; 2.25 rejects it as obsolete.
var CmdMemBufZerocopy64V1 = IOC(DirRead|DirWrite, Magic, 124, 40)

var versionTree = []Version{
	{
		Name:     "2.25.4.0",
		Added:    commands2_25_4_0,
		Features: 0x1ff,
		Compat:   map[uint32][2]uint32{archV2: {5, 7}, archV3: {10, 11}, archV4: {10, 11}},
	},
	{
		// Five new commands (throttling notifications, VA placement, the
		// performance-profile queries, async h2t completion queues); the
		// rest of the ABI, the versions accepted and the features are
		// those of 2.25.4.0.
		Name:     "2.27.4.0",
		Parent:   "2.25.4.0",
		Added:    commands2_27_4_0,
		Features: 0x1ff,
	},
	{
		// Before Trn3: no h2t queue, power-profile, metrics-control or
		// batched zero-copy commands; zero-copy took the 40-byte struct.
		Name:   "2.24.7.0",
		Parent: "2.25.4.0",
		Removed: []string{
			"NEURON_IOCTL_H2T_DMA_ALLOC_QUEUES", "NEURON_IOCTL_H2T_DMA_FREE_QUEUES",
			"NEURON_IOCTL_POWER_PROFILE", "NEURON_IOCTL_METRICS_CTRL",
			"NEURON_IOCTL_MEM_BUF_ZEROCOPY64_BATCHES",
		},
		Added: []Command{{
			Name: "NEURON_IOCTL_MEM_BUF_ZEROCOPY64", Cmd: CmdMemBufZerocopy64V1,
			ArgType: reflect.TypeFor[MemBufCopy64](), ArgSize: 40, Dir: DirRead | DirWrite, Lane: LaneMain, MatchByNr: true,
		}},
		Features: 0xff,
		Compat:   map[uint32][2]uint32{archV2: {5, 7}, archV3: {10, 11}},
	},
	{
		// Before the experimental zero copy and the contiguous scratchpad.
		Name:     "2.23.9.0",
		Parent:   "2.24.7.0",
		Removed:  []string{"NEURON_IOCTL_MEM_BUF_ZEROCOPY64"},
		Features: 0x7f,
	},
	{
		// Before UltraServer modes: no POD_STATUS_V2 / POD_CTRL_V2.
		Name:     "2.22.2.0",
		Parent:   "2.23.9.0",
		Removed:  []string{"NEURON_IOCTL_POD_STATUS_V2", "NEURON_IOCTL_POD_CTRL_V2"},
		Features: 0x7f,
	},
	{
		// The same ABI; Trn2 runtimes were accepted at API level 10 only.
		Name:     "2.20.28.0",
		Parent:   "2.22.2.0",
		Features: 0x7f,
		Compat:   map[uint32][2]uint32{archV2: {5, 7}, archV3: {10, 10}},
	},
}
