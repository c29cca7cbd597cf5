package device

// handlers maps command macro names to their handlers. A command absent
// here is answered by unsupported. Size and direction variants matched by
// _IOC_NR share one entry per family member.
var handlers = map[string]Handler{
	// Discovery and identity (info.go).
	"NEURON_IOCTL_DEVICE_BASIC_INFO":              deviceBasicInfo,
	"NEURON_IOCTL_DEVICE_INFO":                    deviceInfo,
	"NEURON_IOCTL_DEVICE_BDF":                     deviceBDF,
	"NEURON_IOCTL_DEVICE_BDF_EXT":                 deviceBDFExt,
	"NEURON_IOCTL_COMPATIBLE_VERSION":             compatibleVersion,
	"NEURON_IOCTL_DRIVER_INFO_GET":                driverInfo,
	"NEURON_IOCTL_DRIVER_INFO_SET":                driverInfo,
	"NEURON_IOCTL_HOST_DEVICE_ID":                 hostDeviceID,
	"NEURON_IOCTL_HOST_DEVICE_ID_TO_RID_MAP":      hostDeviceIDToRIDMap,
	"NEURON_IOCTL_GET_LOGICAL_TO_PHYSICAL_NC_MAP": logicalToPhysicalNCMap,
	"NEURON_IOCTL_DEVICE_APP_PID":                 deviceAppPID,
	"NEURON_IOCTL_DEVICE_GET_ALL_APPS_INFO":       deviceGetAllAppsInfo,
	"NEURON_IOCTL_NC_PID_STATE_DUMP":              ncPIDStateDump,
	"NEURON_IOCTL_PRINTK":                         printk,
	"NEURON_IOCTL_METRICS_CTRL":                   metricsCtrl,
	"NEURON_IOCTL_RESOURCE_MMAP_INFO":             resourceMmapInfo,

	// Core locks, reservation and init (crwl.go, reserve.go, cinit.go).
	"NEURON_IOCTL_CRWL_READER_ENTER":         crwlReaderEnter,
	"NEURON_IOCTL_CRWL_READER_EXIT":          crwlReaderExit,
	"NEURON_IOCTL_CRWL_WRITER_ENTER":         crwlWriterEnter,
	"NEURON_IOCTL_CRWL_WRITER_DOWNGRADE":     crwlWriterDowngrade,
	"NEURON_IOCTL_CRWL_NC_RANGE_MARK":        crwlRangeMark,
	"NEURON_IOCTL_CRWL_NC_RANGE_MARK_EXT0":   crwlRangeMark,
	"NEURON_IOCTL_CRWL_NC_RANGE_UNMARK":      crwlRangeUnmark,
	"NEURON_IOCTL_CRWL_NC_RANGE_UNMARK_EXT0": crwlRangeUnmark,
	"NEURON_IOCTL_CINIT_SET_STATE":           cinitSetState,
	"NEURON_IOCTL_NC_MODEL_STARTED_COUNT":    ncModelStartedCount,

	// Memory (memory.go).
	"NEURON_IOCTL_MEM_ALLOC":                  memAlloc,
	"NEURON_IOCTL_MEM_ALLOC_V2":               memAllocV2,
	"NEURON_IOCTL_MEM_ALLOC_V2MT":             memAllocV2,
	"NEURON_IOCTL_MEM_ALLOC_V2MT64":           memAllocV2,
	"NEURON_IOCTL_MEM_FREE":                   memFree,
	"NEURON_IOCTL_MEM_GET_PA":                 memGetPA,
	"NEURON_IOCTL_MEM_GET_INFO":               memGetInfo,
	"NEURON_IOCTL_MEM_GET_EXTENDED_INFO":      memGetExtendedInfo,
	"NEURON_IOCTL_MEM_MC_GET_INFO":            memMCGetInfo,
	"NEURON_IOCTL_MEM_MC_GET_INFO_V2":         memMCGetInfo,
	"NEURON_IOCTL_DUMP_MEM_CHUNKS":            dumpMemChunks,
	"NEURON_IOCTL_MEM_BUF_COPY":               memBufCopy,
	"NEURON_IOCTL_MEM_BUF_COPY64":             memBufCopy,
	"NEURON_IOCTL_MEM_COPY":                   memCopy,
	"NEURON_IOCTL_MEM_COPY64":                 memCopy,
	"NEURON_IOCTL_MEMSET":                     memset,
	"NEURON_IOCTL_MEMSET64":                   memset,
	"NEURON_IOCTL_SEMAPHORE_READ":             semaphoreOp,
	"NEURON_IOCTL_SEMAPHORE_WRITE":            semaphoreOp,
	"NEURON_IOCTL_SEMAPHORE_INCREMENT":        semaphoreOp,
	"NEURON_IOCTL_SEMAPHORE_DECREMENT":        semaphoreOp,
	"NEURON_IOCTL_EVENT_GET":                  eventOp,
	"NEURON_IOCTL_EVENT_SET":                  eventOp,
	"NEURON_IOCTL_ACQUIRE_NEURON_DS":          acquireNeuronDS,
	"NEURON_IOCTL_RELEASE_NEURON_DS":          releaseNeuronDS,
	"NEURON_IOCTL_DMABUF_FD":                  dmabufFD,
	"NEURON_IOCTL_HBM_SCRUB_START":            hbmScrubStart,
	"NEURON_IOCTL_HBM_SCRUB_WAIT":             hbmScrubWait,
	"NEURON_IOCTL_MEM_COPY_ASYNC":             memCopyAsync,
	"NEURON_IOCTL_MEM_COPY_ASYNC64":           memCopyAsync,
	"NEURON_IOCTL_MEM_COPY_ASYNC_WAIT":        memCopyAsyncWait,
	"NEURON_IOCTL_MEM_BUF_ZEROCOPY64":         memBufZeroCopy64,
	"NEURON_IOCTL_MEM_BUF_ZEROCOPY64_BATCHES": memBufZeroCopy64Batches,

	// Pods (pod.go).
	"NEURON_IOCTL_POD_INFO":      podInfo,
	"NEURON_IOCTL_POD_STATUS":    podStatus,
	"NEURON_IOCTL_POD_STATUS_V2": podStatus,
	"NEURON_IOCTL_POD_CTRL":      podCtrl,
	"NEURON_IOCTL_POD_CTRL_V2":   podCtrl,

	// Reset (reset.go).
	"NEURON_IOCTL_NC_RESET":       ncReset,
	"NEURON_IOCTL_NC_RESET_READY": ncResetReady,
	"NEURON_IOCTL_DEVICE_RESET":   deviceResetDeprecated,
	"NEURON_IOCTL_DEVICE_READY":   deviceReadyDeprecated,

	// Commands the driver answers without doing anything (stubs.go).
	"NEURON_IOCTL_DEVICE_INIT":              returnZero,
	"NEURON_IOCTL_DEVICE_RELEASE":           returnZero,
	"NEURON_IOCTL_DMA_ENG_INIT":             returnZero,
	"NEURON_IOCTL_DMA_QUEUE_RELEASE":        returnZero,
	"NEURON_IOCTL_NOTIFICATIONS_DESTROY_V1": returnZero,
	"NEURON_IOCTL_NOTIFICATIONS_QUEUE_INFO": returnMinusOne,
	"NEURON_IOCTL_DMA_QUIESCE_QUEUES":       noIoctlCmd,
	"NEURON_IOCTL_DEVICE_RESET_STATUS":      deviceResetStatus,
}
