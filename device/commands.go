package device

import "github.com/neuronfs/neuronfs/ioctl"

// How to add a command
//
//  1. Describe it in ioctl/ (its row in abi/abi-ioctls.tsv or the version
//     delta that brings it, its struct and roles) and run
//     `go generate ./ioctl ./device`: that gives it an ioctl.Macro.
//  2. Write its handler in the file of its facility (memory.go, dma.go,
//     …): func(r *Request) Result, or wrapped in arg() to take a typed
//     argument copied in as the driver's handler does.
//  3. Add one row below, keyed by the macro, made by the constructor that
//     says how the driver's handler behaves:
//     - atOnce: answers without sleeping; runs on a transport's queue.
//     - copies: sleeps only for the copies or memset it does itself (or an
//     async copy for the caller's previous one), whose time is the
//     copy's (budgetCopy); runs on the queue, since no other caller can
//     hold it up.
//     - waitsFor(budget, …): sleeps for something another caller or the
//     device ends (a lock, a reset, the pod coordinator, a scrub): a
//     transport moves it off its queue and watches the caller for death.
//     Its budget is the driver's own bound on that wait (budget.go).
//     - notEmulated(): the facility is not emulated yet; dispatch answers
//     it as unsupported (ENOTSUPP) and the command pages say so.
//  4. A table-consistency test (commands_test.go) checks every command of
//     every version has exactly one row, and that the transports' inline
//     decision is the row's.
//
// Size and direction variants the driver matches by _IOC_NR share their
// family member's row.

// cmdRow is everything the daemon knows of how one command runs:
// dispatch reads the handler, the watchdog the budget, and the transports
// (fs's io_uring queues, the seccomp supervisor's receive loop) whether
// it may run inline on the thread that received it.
type cmdRow struct {
	handler Handler
	// waits: the driver's handler may sleep.
	waits bool
	// budget: how long the driver lets it run before giving up.
	budget budgetClass
	// inline: a transport may serve it on the thread that received it,
	// holding up the callers queued behind it for as long as it runs.
	inline bool
}

func atOnce(h Handler) cmdRow { return cmdRow{handler: h, budget: budgetDefault, inline: true} }

func copies(h Handler) cmdRow {
	return cmdRow{handler: h, waits: true, budget: budgetCopy, inline: true}
}

func notEmulated() cmdRow { return cmdRow{budget: budgetDefault, inline: true} }

func waitsFor(b budgetClass, h Handler) cmdRow {
	return cmdRow{handler: h, waits: true, budget: b}
}

// Inline reports whether a transport may serve command value cmd on the
// thread that received it, from the row of the command (or of the family
// the driver routes it to). A command the version lacks answers EINVAL at
// once: it may.
func (s *System) Inline(cmd uint32) bool {
	if c := s.budgets.command(cmd); c != nil {
		return commands[c.Macro].inline
	}
	return true
}

// commands is the one table of command rows.
var commands = map[ioctl.Macro]cmdRow{
	// Discovery and identity (info.go).
	ioctl.MacroDeviceBasicInfo:           atOnce(deviceBasicInfo),
	ioctl.MacroDeviceInfo:                atOnce(deviceInfo),
	ioctl.MacroDeviceBDF:                 atOnce(deviceBDF),
	ioctl.MacroDeviceBDFExt:              atOnce(arg(deviceBDFExt)),
	ioctl.MacroCompatibleVersion:         atOnce(compatibleVersion),
	ioctl.MacroDriverInfoGet:             atOnce(driverInfo),
	ioctl.MacroDriverInfoSet:             atOnce(driverInfo),
	ioctl.MacroHostDeviceID:              atOnce(hostDeviceID),
	ioctl.MacroHostDeviceIDToRIDMap:      atOnce(hostDeviceIDToRIDMap),
	ioctl.MacroGetLogicalToPhysicalNCMap: atOnce(logicalToPhysicalNCMap),
	ioctl.MacroDeviceAppPID:              atOnce(deviceAppPID),
	ioctl.MacroDeviceGetAllAppsInfo:      atOnce(deviceGetAllAppsInfo),
	ioctl.MacroNCPIDStateDump:            atOnce(arg(ncPIDStateDump)),
	ioctl.MacroPrintk:                    atOnce(arg(printk)),
	ioctl.MacroMetricsCtrl:               atOnce(arg(metricsCtrl)),
	ioctl.MacroResourceMmapInfo:          atOnce(arg(resourceMmapInfo)),

	// Core locks, reservation and init (crwl.go, reserve.go, cinit.go).
	ioctl.MacroCRWLReaderEnter:       waitsFor(budgetCRWLReader, crwlReaderEnter),
	ioctl.MacroCRWLReaderExit:        atOnce(crwlReaderExit),
	ioctl.MacroCRWLWriterEnter:       waitsFor(budgetCRWLWriter, crwlWriterEnter),
	ioctl.MacroCRWLWriterDowngrade:   atOnce(crwlWriterDowngrade),
	ioctl.MacroCRWLNCRangeMark:       atOnce(crwlRangeMark),
	ioctl.MacroCRWLNCRangeMarkExt0:   atOnce(crwlRangeMark),
	ioctl.MacroCRWLNCRangeUnmark:     atOnce(crwlRangeUnmark),
	ioctl.MacroCRWLNCRangeUnmarkExt0: atOnce(crwlRangeUnmark),
	ioctl.MacroCInitSetState:         waitsFor(budgetCInit, arg(cinitSetState)),
	ioctl.MacroNCModelStartedCount:   atOnce(arg(ncModelStartedCount)),

	// Memory (memory.go).
	ioctl.MacroMemAlloc:                       atOnce(memAlloc),
	ioctl.MacroMemAllocV2:                     atOnce(arg(memAllocV2)),
	ioctl.MacroMemAllocV2MT:                   atOnce(arg(memAllocV2MT)),
	ioctl.MacroMemAllocV2MT64PA:               atOnce(arg(memAllocV2MT64PA)),
	ioctl.MacroHostMemPin:                     atOnce(arg(hostMemPin)),
	ioctl.MacroHostMemUnpin:                   atOnce(arg(hostMemUnpin)),
	ioctl.MacroDMABufFDV2:                     atOnce(arg(dmabufFDV2)),
	ioctl.MacroMemAllocV2MT64:                 atOnce(arg(memAllocV2MT64)),
	ioctl.MacroMemFree:                        atOnce(arg(memFree)),
	ioctl.MacroMemGetPA:                       atOnce(arg(memGetPA)),
	ioctl.MacroMemGetInfo:                     atOnce(arg(memGetInfo)),
	ioctl.MacroMemGetExtendedInfo:             atOnce(arg(memGetExtendedInfo)),
	ioctl.MacroMemMCGetInfo:                   atOnce(arg(memMCGetInfo)),
	ioctl.MacroMemMCGetInfoV2:                 atOnce(arg(memMCGetInfoV2)),
	ioctl.MacroDumpMemChunks:                  atOnce(arg(dumpMemChunks)),
	ioctl.MacroMemBufCopy:                     copies(arg(memBufCopy32)),
	ioctl.MacroMemBufCopy64:                   copies(arg(memBufCopy64)),
	ioctl.MacroMemCopy:                        copies(arg(memCopy32)),
	ioctl.MacroMemCopy64:                      copies(arg(memCopy64)),
	ioctl.MacroMemset:                         copies(arg(memset32)),
	ioctl.MacroMemset64:                       copies(arg(memset64)),
	ioctl.MacroNotificationsInitV1:            atOnce(arg(notificationsInitV1)),
	ioctl.MacroNotificationsInitV2:            atOnce(arg(notificationsInit)),
	ioctl.MacroNotificationsInitWithReallocV2: atOnce(arg(notificationsInitRealloc)),
	ioctl.MacroSemaphoreRead:                  atOnce(arg(semaphoreOp)),
	ioctl.MacroSemaphoreWrite:                 atOnce(arg(semaphoreOp)),
	ioctl.MacroSemaphoreIncrement:             atOnce(arg(semaphoreOp)),
	ioctl.MacroSemaphoreDecrement:             atOnce(arg(semaphoreOp)),
	ioctl.MacroEventGet:                       atOnce(arg(eventOp)),
	ioctl.MacroEventSet:                       atOnce(arg(eventOp)),
	ioctl.MacroAcquireNeuronDS:                atOnce(arg(acquireNeuronDS)),
	ioctl.MacroReleaseNeuronDS:                atOnce(arg(releaseNeuronDS)),
	ioctl.MacroDMABufFD:                       atOnce(arg(dmabufFD)),
	ioctl.MacroGetVAPlacement:                 atOnce(arg(getVAPlacement)),
	ioctl.MacroThrottlingNotifications:        atOnce(arg(throttlingNotifications)),
	ioctl.MacroGetPerformanceProfile:          atOnce(getPerformanceProfile),
	ioctl.MacroAvailablePerfProfiles:          atOnce(arg(availablePerfProfiles)),
	ioctl.MacroGetAsyncH2TDMAComplQueues:      atOnce(arg(asyncH2TComplQueues)),
	ioctl.MacroHBMScrubStart:                  atOnce(arg(hbmScrubStart)),
	ioctl.MacroHBMScrubWait:                   waitsFor(budgetDefault, arg(hbmScrubWait)),
	ioctl.MacroMemCopyAsync:                   copies(arg(memCopyAsync32)),
	ioctl.MacroMemCopyAsync64:                 copies(arg(memCopyAsync64)),
	ioctl.MacroMemCopyAsyncWait:               waitsFor(budgetCopy, arg(memCopyAsyncWait)),
	ioctl.MacroMemBufZerocopy64Deprecated:     copies(memBufZeroCopy64),
	ioctl.MacroMemBufZerocopy64:               copies(memBufZeroCopy64),
	ioctl.MacroMemBufZerocopy64Batches:        copies(arg(memBufZeroCopy64Batches)),

	// DMA engines and queues (dma.go).
	ioctl.MacroDMAQueueInit:         atOnce(dmaQueueInit),
	ioctl.MacroDMAQueueInitBatch:    atOnce(dmaQueueInitBatch),
	ioctl.MacroDMAQueueCopyStart:    atOnce(dmaCopyStart),
	ioctl.MacroDMAAckCompleted:      atOnce(dmaAckCompleted),
	ioctl.MacroDMAEngSetState:       atOnce(dmaEngSetState),
	ioctl.MacroDMAEngGetState:       atOnce(dmaEngGetState),
	ioctl.MacroDMAQueueGetState:     atOnce(dmaQueueGetState),
	ioctl.MacroDMACopyDescriptors:   atOnce(arg(dmaCopyDescriptors32)),
	ioctl.MacroDMACopyDescriptors64: atOnce(arg(dmaCopyDescriptors64)),
	ioctl.MacroDMADescriptorCopyout: atOnce(arg(dmaDescriptorCopyout)),
	ioctl.MacroH2TDMAAllocQueues:    atOnce(arg(h2tAllocQueues)),
	ioctl.MacroH2TDMAFreeQueues:     atOnce(arg(h2tFreeQueues)),

	// BAR0, firmware and engine programming (bar.go, program.go).
	ioctl.MacroBARRead:           atOnce(arg(barReadWrite)),
	ioctl.MacroBARWrite:          atOnce(arg(barReadWrite)),
	ioctl.MacroPostMetric:        atOnce(arg(postMetric)),
	ioctl.MacroReadHWCounters:    atOnce(arg(readHWCounters)),
	ioctl.MacroPowerProfile:      atOnce(powerProfile),
	ioctl.MacroProgramEngine:     atOnce(arg(programEngine)),
	ioctl.MacroProgramEngineNC:   atOnce(arg(programEngineNC)),
	ioctl.MacroProgramEngineNC64: atOnce(arg(programEngineNC64)),

	// Pods (pod.go).
	ioctl.MacroPodInfo:     waitsFor(budgetPod, podInfo),
	ioctl.MacroPodStatus:   waitsFor(budgetPod, podStatus),
	ioctl.MacroPodStatusV2: waitsFor(budgetPod, podStatus),
	ioctl.MacroPodCtrl:     waitsFor(budgetPod, podCtrl),
	ioctl.MacroPodCtrlV2:   waitsFor(budgetPod, podCtrl),

	// Reset (reset.go).
	ioctl.MacroNCReset:      atOnce(arg(ncReset)),
	ioctl.MacroNCResetReady: waitsFor(budgetReset, arg(ncResetReady)),
	ioctl.MacroDeviceReset:  atOnce(deviceResetDeprecated),
	ioctl.MacroDeviceReady:  waitsFor(budgetReset, deviceReadyDeprecated),

	// Commands the driver answers without doing anything (stubs.go).
	ioctl.MacroDeviceInit:             atOnce(returnZero),
	ioctl.MacroDeviceRelease:          atOnce(returnZero),
	ioctl.MacroDMAEngInit:             atOnce(returnZero),
	ioctl.MacroDMAQueueRelease:        atOnce(returnZero),
	ioctl.MacroNotificationsDestroyV1: atOnce(returnZero),
	ioctl.MacroNotificationsQueueInfo: atOnce(returnMinusOne),
	ioctl.MacroDMAQuiesceQueues:       atOnce(noIoctlCmd),
	ioctl.MacroDeviceResetStatus:      atOnce(deviceResetStatus),
}
