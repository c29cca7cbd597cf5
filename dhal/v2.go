package dhal

import "time"

// V2: Trainium1 (Trn1) and Inferentia2 (Inf2). Both chips share one DHAL;
// only the sysfs strings, the routing-id renumbering and the neighbour
// tables differ between them.

var (
	productTrn1 = Product{
		Name: "Trn1", Arch: V2, PCIVendor: amazonVendor, PCIDevice: 0x7164,
		NDArchType: "NDv2", NCArchType: "NCv2", InstanceType: "Trn1", DeviceName: "Trainium1",
	}
	// Inf2 reports "v3" as its device arch suffix although it is a V2 chip.
	productInf2 = Product{
		Name: "Inf2", Arch: V2, PCIVendor: amazonVendor, PCIDevice: 0x7264,
		NDArchType: "NDv3", NCArchType: "NCv2", InstanceType: "Inf2", DeviceName: "Inferentia2",
	}
)

const amazonVendor = 0x1d0f

func v2Facts() ArchFacts {
	return ArchFacts{
		Arch:                  V2,
		CoresPerDevice:        2,
		ActiveCoreMap:         0x3,
		DiesPerDevice:         1,
		TopSPsPerDevice:       6, // 3 per core
		SemaphoresPerCore:     256,
		EventsPerCore:         256,
		DMAEnginesPerCore:     16,
		DMAEnginesPerDevice:   34, // 2x16 core engines + D2H (32) + H2D (33)
		DMAEngineSlots:        132,
		DMAEnginesResetOnExit: 32,
		QueuesPerEngine:       16,
		SBUFPartitionBytes:    192 << 10, // sunda (ISA header, wiki 59909149245)
		HBMChannels:           2,
		HBMBases:              []uint64{0x0, 0x1000000000},
		HBMSize:               0x400000000, // 16 GiB
		BAR4ChannelStride:     0x400000000, // channels are packed back to back in BAR4
		HostBase:              0x100000000000,
		HostRouteMask:         0x1f00000000000,
		MiscRAMBar0:           0x30fa0000,
		MiscRAMDevice:         0xffff0fa0000,
		BAR0Size:              0x40000000,
		NQTypes:               6, // includes THROTTLE
		NQQueuesPerType:       16,
		ResetInitiateMaxWait:  120 * time.Second,

		tpbBase:   0x0,
		nxEngines: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
		// Core 0's engines, core 1's, then D2H (32) and H2D (33).
		udmaBase: append(append(strided(0x30000000, 0x40000, 16), strided(0x30700000, 0x40000, 16)...), 0x30600000, 0x30d00000),
		programRegions: []Range{
			{0xfffc0000000, 0x8000000}, // both cores' TPB windows
			{0xfffd0000000, 0x1800000}, // the six TOP_SP windows
		},
		tpbSoC:      strided(0xfffc0000000, TPBWindowSize, 2),
		h2tEngine:   []int{32, 33}, // core 0 uses D2H, core 1 uses H2D
		h2tQueue:    []int{0, 0},
		coreNQ:      []uint64{0x30535000, 0x30c35000},
		topSPNQ:     strided(0x30e04000, 0x40000, 6),
		topSPWindow: strided(0x10000000, TopSPWindowSize, 6),
		mmapTable: buildMmapTable([]mmapFamily{
			{BlockTPB, ResourceSemaphore, strided(0xfffc2700000, TPBWindowSize, 2), TPBSemaphoreArea, false},
			{BlockTPB, ResourceSBUF, strided(0xfffc0000000, TPBWindowSize, 2), TPBSBUFSize, false},
			{BlockTopSP, ResourceSemaphore, strided(0xfffd0000000, TopSPWindowSize, 6), TPBSemaphoreArea, false},
			{BlockTopSP, ResourceAll, strided(0xfffd0000000, TopSPWindowSize, 6), TopSPWindowSize, true},
		}),
	}
}

// trn1RIDToIndex renames Trn1 firmware routing ids to user-visible device
// indices within each group of 16 (the group number is kept: +16 per group).
var trn1RIDToIndex = [16]uint32{0, 4, 1, 5, 3, 7, 2, 6, 12, 8, 13, 9, 15, 11, 14, 10}

// trn1Neighbours: 2D torus of a 16-device Trn1 box, row = device index % 16.
var trn1Neighbours = [16][]uint32{
	{12, 3, 4, 1}, {13, 0, 5, 2}, {14, 1, 6, 3}, {15, 2, 7, 0},
	{0, 7, 8, 5}, {1, 4, 9, 6}, {2, 5, 10, 7}, {3, 6, 11, 4},
	{4, 11, 12, 9}, {5, 8, 13, 10}, {6, 9, 14, 11}, {7, 10, 15, 8},
	{8, 15, 0, 13}, {9, 12, 1, 14}, {10, 13, 2, 15}, {11, 14, 3, 12},
}

// inf2Ring12: inf2.48xlarge, 12 devices in a ring (left, right).
var inf2Ring12 = [12][]uint32{
	{11, 1}, {0, 2}, {1, 3}, {2, 4}, {3, 5}, {4, 6},
	{5, 7}, {6, 8}, {7, 9}, {8, 10}, {9, 11}, {10, 0},
}

// inf2Line6: inf2.24xlarge, 6 devices in a line; the ends have one neighbour.
var inf2Line6 = [6][]uint32{{1}, {0, 2}, {1, 3}, {2, 4}, {3, 5}, {4}}
