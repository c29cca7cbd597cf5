package dhal

import "time"

// V3: Trainium2 (Trn2). 8 cores = 2 dies x 2 SENGs x 2 cores. V4 starts
// from these facts (see v4.go).

var productTrn2 = Product{
	Name: "Trn2", Arch: V3, PCIVendor: amazonVendor, PCIDevice: 0x7364,
	NDArchType: "NDv3", NCArchType: "NCv3", InstanceType: "Trn2", DeviceName: "Trainium2",
}

func v3Facts() ArchFacts {
	return ArchFacts{
		Arch:                  V3,
		CoresPerDevice:        8,
		ActiveCoreMap:         0xff,
		DiesPerDevice:         2,
		TopSPsPerDevice:       16, // 2 per core
		SemaphoresPerCore:     256,
		EventsPerCore:         256,
		DMAEnginesPerCore:     16,
		DMAEnginesPerDevice:   132, // 128 SENG engines + 4 h2t (128..131)
		DMAEngineSlots:        132,
		DMAEnginesResetOnExit: 128,
		QueuesPerEngine:       16,
		SBUFPartitionBytes:    224 << 10, // cayman (ISA header, wiki 59909149245)
		HBMChannels:           4,
		HBMBases:              []uint64{0x0, 0x4000000000, 0x800000000000, 0x804000000000},
		HBMSize:               0x600000000, // 24 GiB active in a 64 GiB window
		BAR4ChannelStride:     0x1000000000,
		HostBase:              0x400000000000,
		HostRouteMask:         0x400000000000,
		RingIDErrorsMasked:    true,
		MiscRAMBar0:           0x6c84000,
		MiscRAMDevice:         0x8006c84000,
		BAR0Size:              0x100000000,
		NQTypes:               5, // no THROTTLE queues in hardware
		NQQueuesPerType:       16,
		ResetInitiateMaxWait:  480 * time.Second,
		PodLinkEngines:        [2][2]int{{36, 68}, {4, 100}},

		tpbBase:   0xd0000000,
		nxEngines: []int{0, 1, 2, 3, 4, 7, 8},
		udmaBase:  v3UDMABases(),
		// One h2t engine per SENG (D2H_0, H2D_0, D2H_1, H2D_1), shared by
		// the SENG's two cores: the even core takes queue 0, the odd queue 1.
		h2tEngine: []int{128, 128, 129, 129, 130, 130, 131, 131},
		h2tQueue:  []int{0, 1, 0, 1, 0, 1, 0, 1},
		coreNQ: []uint64{
			0x6001000, 0x6181000, 0x6401000, 0x6581000, // die 0 (APB_IO_0)
			0x46001000, 0x46181000, 0x46401000, 0x46581000, // die 1 (APB_IO_1)
		},
		topSPNQ:     append(strided(0x6a00000, 0x40000, 8), strided(0x46a00000, 0x40000, 8)...),
		topSPWindow: append(strided(0xf0000000, TopSPWindowSize, 8), strided(0xf2800000, TopSPWindowSize, 8)...),
		mmapTable:   v3MmapTable(0x600000000),

		programRegions: v3ProgramRegions(0x600000000),
		tpbSoC:         append([]uint64(nil), v3TPBSoC...),
		peerRoutes:     append([]uint64(nil), v3PeerRoutes...),
		peerRouteMask:  v3PeerRouteMask,
	}
}

// v3UDMABases: 32 engines per SENG at 1 MiB strides, then the four h2t
// engines (D2H_0, H2D_0, D2H_1, H2D_1).
func v3UDMABases() []uint64 {
	var out []uint64
	for _, seng := range []uint64{0x82000000, 0x94000000, 0xa2000000, 0xb4000000} {
		out = append(out, strided(seng, 0x100000, 32)...)
	}
	return append(out, 0x6800000, 0x6900000, 0x46800000, 0x46900000)
}

// v3ProgramRegions is the V3/V4 PROGRAM_ENGINE whitelist; only the HBM
// size differs between them.
func v3ProgramRegions(hbmSize uint64) []Range {
	var out []Range
	for _, b := range v3TPBSoC {
		out = append(out, Range{b, 0x804000000}) // TPB windows
	}
	for _, b := range append(strided(0x8280000000, 0x40000000, 10), strided(0x808280000000, 0x40000000, 10)...) {
		out = append(out, Range{b, TopSPWindowSize})
	}
	for _, b := range []uint64{0x0, 0x4000000000, 0x800000000000, 0x804000000000} {
		out = append(out, Range{b, hbmSize})
	}
	for _, b := range []uint64{0x1200000000, 0x5200000000, 0x801200000000, 0x805200000000} {
		out = append(out, Range{b, 0x34c0000}) // pre-processing blocks
	}
	return out
}

// v3MmapTable is the V3/V4 special mmap table; only the HBM size differs.
// The TPB offsets advance by one window per core from the TPB-0 device
// address, so for cores 1-7 they are not the cores' device addresses.
func v3MmapTable(hbmSize uint64) []MmapResource {
	topSP := append(strided(0x8280000000, 0x40000000, 8), strided(0x808280000000, 0x40000000, 8)...)
	return buildMmapTable([]mmapFamily{
		{BlockTPB, ResourceSemaphore, strided(0x2002700000, TPBWindowSize, 8), TPBSemaphoreArea, false},
		{BlockTPB, ResourceSBUF, strided(0x2000000000, TPBWindowSize, 8), TPBSBUFSize, false},
		{BlockTopSP, ResourceSemaphore, topSP, TPBSemaphoreArea, false},
		{BlockTopSP, ResourceAll, topSP, TopSPWindowSize, true},
		{BlockHBM, ResourceDMEM, []uint64{0x0, 0x4000000000, 0x800000000000, 0x804000000000}, hbmSize, false},
	})
}

// torusRIDToIndex renames Trn2/Trn3 firmware routing ids (mod 16, no group
// offset) to user-visible device indices on standard and UltraServer hosts.
var torusRIDToIndex = [16]uint32{0, 3, 4, 7, 12, 15, 8, 11, 1, 2, 5, 6, 13, 14, 9, 10}

// pdsRIDToIndex keeps JBOG pairs together; in practice the identity (mod 16).
var pdsRIDToIndex = [16]uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

// trn2Neighbours: 4x4 torus of a 16-device Trn2/Trn3 box, row = index % 16,
// columns in SENG order.
var trn2Neighbours = [16][]uint32{
	{12, 1, 3, 4}, {0, 13, 5, 2}, {14, 3, 1, 6}, {2, 15, 7, 0},
	{8, 5, 7, 0}, {4, 9, 1, 6}, {10, 7, 5, 2}, {6, 11, 3, 4},
	{4, 9, 11, 12}, {8, 5, 13, 10}, {6, 11, 9, 14}, {10, 7, 15, 8},
	{0, 13, 15, 8}, {12, 1, 9, 14}, {2, 15, 13, 10}, {14, 3, 11, 12},
}

// Logical->physical core order for the SENG-swap map. Each device uses one
// of four rows; the device->row assignment repeats every 4 devices in pairs.
var (
	ncRowA = [8]uint32{4, 5, 6, 7, 2, 3, 0, 1}
	ncRowB = [8]uint32{2, 3, 0, 1, 4, 5, 6, 7}
	ncRowC = [8]uint32{0, 1, 2, 3, 6, 7, 4, 5}
	ncRowD = [8]uint32{6, 7, 4, 5, 0, 1, 2, 3}

	ncSwapRows = [16]*[8]uint32{
		&ncRowA, &ncRowB, &ncRowA, &ncRowB, &ncRowC, &ncRowD, &ncRowC, &ncRowD,
		&ncRowA, &ncRowB, &ncRowA, &ncRowB, &ncRowC, &ncRowD, &ncRowC, &ncRowD,
	}
)

// dieFlipMask is XOR'ed into the logical core index on die-flipped nodes
// (UltraServer nodes 1 and 3, or module parameter force_die_flip).
const dieFlipMask = 0x6

// v3PlatformNames: DMI product-name prefixes (compared over the full
// length of the listed name) and the platform they select on V3.
var v3PlatformNames = []platformRule{
	{"trn2p.48xlarge", PlatformUltraServer},
	{"trn2eu.48xlarge", PlatformUltraServer},
	{"trn2u.48xlarge", PlatformUltraServer},
	{"trn2u-ac.24xlarge", PlatformUltraServer},
	{"trn2es.48xlarge", PlatformPDS},
}
