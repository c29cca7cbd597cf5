package ioctl

// Memory categories of MEM_ALLOC_V2MT(64) (mem_alloc_category_t in the
// driver's shared header). They select a sysfs counter; only
// MemTypeContiguousScratchpadDevice changes where memory is placed.
const (
	MemTypeUnknownHost uint32 = iota
	MemTypeCodeHost
	MemTypeTensorsHost
	MemTypeConstantsHost
	MemTypeMiscHost
	MemTypeNcdevHost
	MemTypeNotificationHost
	MemTypeUnknownDevice
	MemTypeCodeDevice
	MemTypeTensorsDevice
	MemTypeConstantsDevice
	MemTypeScratchpadDevice
	MemTypeMiscDevice
	MemTypeNcdevDevice
	MemTypeCollectivesDevice
	MemTypeScratchpadNonsharedDevice
	MemTypeNotificationDevice
	MemTypeDMARingsHost
	MemTypeDMARingsDevice
	MemTypeContiguousScratchpadDevice
	MemTypeMax
)
