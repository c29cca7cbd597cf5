package main

import "github.com/neuronfs/neuronfs/ioctl"

// family is one page of docs/commands: the commands a reader looks up
// together, and the hand-written notes (notes/<slug>.md) about how
// neuronfs emulates them.
type family struct {
	slug, title string
	macros      []ioctl.Macro
}

// families is the one mapping from command to page. Every macro of every
// emulated version must be on exactly one page: docgen refuses to write
// the pages otherwise, so a new version's command cannot go undocumented.
// Commands that versions after the base one (2.25.4.0) added are grouped
// on their own page, where their notes (written per version) live; a
// command whose value merely changed stays with its family.
var families = []family{
	{"identity", "Discovery and identity", []ioctl.Macro{
		ioctl.MacroDeviceBasicInfo, ioctl.MacroDeviceInfo, ioctl.MacroDeviceBDF, ioctl.MacroDeviceBDFExt,
		ioctl.MacroCompatibleVersion, ioctl.MacroDriverInfoGet, ioctl.MacroDriverInfoSet,
		ioctl.MacroHostDeviceID, ioctl.MacroHostDeviceIDToRIDMap, ioctl.MacroGetLogicalToPhysicalNCMap,
		ioctl.MacroDeviceAppPID, ioctl.MacroDeviceGetAllAppsInfo, ioctl.MacroNCPIDStateDump,
		ioctl.MacroPrintk, ioctl.MacroMetricsCtrl, ioctl.MacroDeviceInit, ioctl.MacroDeviceRelease,
	}},
	{"memory", "Memory: allocation, information, scrub, dma-buf", []ioctl.Macro{
		ioctl.MacroMemAlloc, ioctl.MacroMemAllocV2, ioctl.MacroMemAllocV2MT, ioctl.MacroMemAllocV2MT64,
		ioctl.MacroMemFree, ioctl.MacroMemGetPA, ioctl.MacroMemGetInfo, ioctl.MacroMemGetExtendedInfo,
		ioctl.MacroMemMCGetInfo, ioctl.MacroMemMCGetInfoV2, ioctl.MacroDumpMemChunks,
		ioctl.MacroResourceMmapInfo, ioctl.MacroHBMScrubStart, ioctl.MacroHBMScrubWait, ioctl.MacroDMABufFD,
	}},
	{"copies", "Copies and memset", []ioctl.Macro{
		ioctl.MacroMemBufCopy, ioctl.MacroMemBufCopy64, ioctl.MacroMemCopy, ioctl.MacroMemCopy64,
		ioctl.MacroMemset, ioctl.MacroMemset64, ioctl.MacroMemBufZerocopy64, ioctl.MacroMemBufZerocopy64Batches,
		ioctl.MacroMemCopyAsync, ioctl.MacroMemCopyAsync64, ioctl.MacroMemCopyAsyncWait,
	}},
	{"dma", "DMA engines and queues", []ioctl.Macro{
		ioctl.MacroDMAQueueInit, ioctl.MacroDMAQueueInitBatch, ioctl.MacroDMAQueueCopyStart,
		ioctl.MacroDMAAckCompleted, ioctl.MacroDMAEngSetState, ioctl.MacroDMAEngGetState,
		ioctl.MacroDMAQueueGetState, ioctl.MacroDMACopyDescriptors, ioctl.MacroDMACopyDescriptors64,
		ioctl.MacroDMADescriptorCopyout, ioctl.MacroH2TDMAAllocQueues, ioctl.MacroH2TDMAFreeQueues,
		ioctl.MacroDMAEngInit, ioctl.MacroDMAQueueRelease, ioctl.MacroDMAQuiesceQueues,
	}},
	{"notifications", "Notification queues", []ioctl.Macro{
		ioctl.MacroNotificationsInitV1, ioctl.MacroNotificationsInitV2, ioctl.MacroNotificationsInitWithReallocV2,
		ioctl.MacroNotificationsDestroyV1, ioctl.MacroNotificationsQueueInfo,
	}},
	{"exec", "Semaphores, events and the exec doorbell", []ioctl.Macro{
		ioctl.MacroSemaphoreRead, ioctl.MacroSemaphoreWrite, ioctl.MacroSemaphoreIncrement,
		ioctl.MacroSemaphoreDecrement, ioctl.MacroEventGet, ioctl.MacroEventSet,
	}},
	{"locks", "Core locks, reservation and core init", []ioctl.Macro{
		ioctl.MacroCRWLReaderEnter, ioctl.MacroCRWLReaderExit, ioctl.MacroCRWLWriterEnter,
		ioctl.MacroCRWLWriterDowngrade, ioctl.MacroCRWLNCRangeMark, ioctl.MacroCRWLNCRangeMarkExt0,
		ioctl.MacroCRWLNCRangeUnmark, ioctl.MacroCRWLNCRangeUnmarkExt0, ioctl.MacroCInitSetState,
		ioctl.MacroNCModelStartedCount,
	}},
	{"reset", "Reset", []ioctl.Macro{
		ioctl.MacroNCReset, ioctl.MacroNCResetReady, ioctl.MacroDeviceReset, ioctl.MacroDeviceReady,
		ioctl.MacroDeviceResetStatus,
	}},
	{"bar", "BAR registers, firmware, power and engine programming", []ioctl.Macro{
		ioctl.MacroBARRead, ioctl.MacroBARWrite, ioctl.MacroPostMetric, ioctl.MacroReadHWCounters,
		ioctl.MacroPowerProfile, ioctl.MacroProgramEngine, ioctl.MacroProgramEngineNC, ioctl.MacroProgramEngineNC64,
	}},
	{"pods", "UltraServer pods", []ioctl.Macro{
		ioctl.MacroPodInfo, ioctl.MacroPodStatus, ioctl.MacroPodStatusV2, ioctl.MacroPodCtrl, ioctl.MacroPodCtrlV2,
	}},
	{"datastore", "Datastores", []ioctl.Macro{
		ioctl.MacroAcquireNeuronDS, ioctl.MacroReleaseNeuronDS,
	}},
	{"versions", "Commands added after 2.25.4.0, and version changes", []ioctl.Macro{
		ioctl.MacroGetVAPlacement, ioctl.MacroGetPerformanceProfile, ioctl.MacroAvailablePerfProfiles,
		ioctl.MacroThrottlingNotifications, ioctl.MacroGetAsyncH2TDMAComplQueues,
		ioctl.MacroMemAllocV2MT64PA, ioctl.MacroHostMemPin, ioctl.MacroHostMemUnpin,
		ioctl.MacroMemBufZerocopy64Deprecated, ioctl.MacroDMABufFDV2,
	}},
}
