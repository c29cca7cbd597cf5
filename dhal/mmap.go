package dhal

// Special mmap resources: regions outside any allocated chunk that a
// process may map by asking RESOURCE_MMAP_INFO for their offset and size.

// MmapBlock is the block kind of RESOURCE_MMAP_INFO.
type MmapBlock uint32

const (
	BlockTPB   MmapBlock = 0
	BlockTopSP MmapBlock = 1
	BlockHBM   MmapBlock = 2
)

// MmapResourceKind is the resource kind of RESOURCE_MMAP_INFO.
type MmapResourceKind uint32

const (
	ResourceSemaphore MmapResourceKind = 0
	ResourceAll       MmapResourceKind = 1 // the whole block, read-only
	ResourceSBUF      MmapResourceKind = 2
	ResourceDMEM      MmapResourceKind = 3
)

// MmapResource is one entry of the driver's special mmap table.
type MmapResource struct {
	Block    MmapBlock
	BlockID  uint32
	Resource MmapResourceKind
	Offset   uint64 // what mmap takes (a physical address)
	Size     uint64 // the exact length mmap must ask for
	ReadOnly bool
}

// mmapFamily describes one strided run of the table.
type mmapFamily struct {
	block    MmapBlock
	resource MmapResourceKind
	offsets  []uint64 // by block id
	size     uint64
	readOnly bool
}

func buildMmapTable(families []mmapFamily) []MmapResource {
	var out []MmapResource
	for _, fam := range families {
		for id, off := range fam.offsets {
			out = append(out, MmapResource{Block: fam.block, BlockID: uint32(id), Resource: fam.resource, Offset: off, Size: fam.size, ReadOnly: fam.readOnly})
		}
	}
	return out
}

// MmapResources returns the arch's special mmap table.
func (f *ArchFacts) MmapResources() []MmapResource {
	return append([]MmapResource(nil), f.mmapTable...)
}

// LookupMmapResource finds the entry for (block, id, resource).
func (f *ArchFacts) LookupMmapResource(block MmapBlock, id uint32, res MmapResourceKind) (MmapResource, bool) {
	for _, r := range f.mmapTable {
		if r.Block == block && r.BlockID == id && r.Resource == res {
			return r, true
		}
	}
	return MmapResource{}, false
}

// PhysicalSpan returns the end of the highest physical address the device
// can be asked about: HBM, host memory under the route bit, the special
// resources and the regions PROGRAM_ENGINE writes. The emulated physical address space covers [0, span).
func (f *ArchFacts) PhysicalSpan() uint64 {
	end := f.HostBase + HostMemorySpan
	for _, b := range f.HBMBases {
		end = max(end, b+f.HBMSize)
	}
	for _, r := range f.mmapTable {
		end = max(end, r.Offset+r.Size)
	}
	for _, r := range f.programRegions {
		end = max(end, r.Base+r.Size)
	}
	return end
}

// HBMBytes is the device memory a device declares: every channel's
// active size.
func (f *ArchFacts) HBMBytes() uint64 { return uint64(f.HBMChannels) * f.HBMSize }

// HostMemorySpan is the emulated host-physical range that host chunks come
// from: the driver allocates them with GFP_DMA32, below 4 GiB.
const HostMemorySpan = 1 << 32
