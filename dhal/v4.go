package dhal

// V4: Trainium3 (Trn3). The driver registers the V3 DHAL first and then
// overrides a handful of entries, so V4 facts are V3 facts plus the
// differences below. COMPATIBLE_VERSION is not overridden (reports 10..11).

// productTrn3 uses the first of the two Trn3 PCI ids; ProductForPCI also
// accepts the second one (0x7565).
var productTrn3 = Product{
	Name: "Trn3", Arch: V4, PCIVendor: amazonVendor, PCIDevice: 0x7564,
	NDArchType: "NDv4", NCArchType: "NCv4", InstanceType: "Trn3", DeviceName: "Trainium3",
}

// trn3PCIDevices are both ids the driver binds as Trn3.
var trn3PCIDevices = []uint16{0x7564, 0x7565}

func v4Facts() ArchFacts {
	f := v3Facts()
	f.Arch = V4
	f.HBMSize = 0x900000000          // 36 GiB per stack
	f.SBUFPartitionBytes = 256 << 10 // mariana (ISA header, wiki 59909149245)
	f.mmapTable = v3MmapTable(f.HBMSize)
	f.programRegions = v3ProgramRegions(f.HBMSize)
	f.PodLinkEngines = [2][2]int{{40, 72}, {8, 104}}
	return f
}

// v4PlatformNames replaces the V3 rules entirely: V4 knows no UltraServer
// names (and ignores force_userver). The second PDS rule compares only the
// first 14 characters ("trn3-dev0.48xl"), because the driver uses the
// length of "trn3s.48xlarge" for both comparisons.
var v4PlatformNames = []platformRule{
	{"trn3s.48xlarge", PlatformPDS},
	{"trn3-dev0.48xlarge"[:len("trn3s.48xlarge")], PlatformPDS},
}

// v4ZeroRoutingIDNames: on these instance types the driver does not read
// the routing id from firmware and uses 0 (single-device instances).
var v4ZeroRoutingIDNames = []string{"trn3pd98.3xlarge"}
