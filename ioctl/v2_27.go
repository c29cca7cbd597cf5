package ioctl

import "reflect"

// Driver 2.27.4.0 adds five commands to 2.25.4.0 and changes none
// (neuron_ioctl.h of aws-neuronx-dkms 2.27.4.0). Their arguments are
// written here by hand: the reference tables describe 2.25.4.0.

// GetVAPlacement mirrors C neuron_ioctl_get_va_placement (16 bytes): va
// in, the device and HBM the mapping's memory is on out.
type GetVAPlacement struct {
	VA          uint64
	DeviceIndex int32
	HBMIndex    int32
}

// ThrottlingNotifications mirrors C neuron_ioctl_throttling_notifications
// (4 bytes): 0 disables the firmware's throttling notifications.
type ThrottlingNotifications struct {
	Enable uint32
}

// AvailablePerfProfiles mirrors C neuron_ioctl_available_perf_profiles
// (36 bytes, 2-byte aligned).
type AvailablePerfProfiles struct {
	RequestedFeature uint16
	NumProfiles      uint8
	Bitmap           [32]uint8
	_                [1]byte
}

// H2TComplQueueInfo is one entry of GetAsyncH2TDMAComplQueues.
type H2TComplQueueInfo struct {
	MmapOffset uint64
	MmapSize   uint32
	_          [4]byte
}

// GetAsyncH2TDMAComplQueues mirrors C
// neuron_ioctl_get_async_h2t_dma_compl_queues (264 bytes).
type GetAsyncH2TDMAComplQueues struct {
	NCID           uint32
	QIDBitmap      uint32
	ComplQueueInfo [16]H2TComplQueueInfo
}

// Command values new in 2.27.4.0.
var (
	CmdThrottlingNotifications   = IOC(DirWrite, Magic, 130, 4)
	CmdGetVAPlacement            = IOC(DirWrite, Magic, 131, 16)
	CmdGetPerformanceProfile     = IOC(DirRead|DirWrite, Magic, 132, 8)
	CmdAvailablePerfProfiles     = IOC(DirRead|DirWrite, Magic, 134, 36)
	CmdGetAsyncH2TDMAComplQueues = IOC(DirRead|DirWrite, Magic, 135, 264)
)

var commands2_27_4_0 = []Command{
	{Name: "NEURON_IOCTL_THROTTLING_NOTIFICATIONS", Cmd: CmdThrottlingNotifications, ArgType: reflect.TypeFor[ThrottlingNotifications](), ArgSize: 4, Dir: DirWrite, Lane: LaneMain},
	// The misc lane routes every command with _IOC_NR 131 to it.
	{Name: "NEURON_IOCTL_GET_VA_PLACEMENT", Cmd: CmdGetVAPlacement, ArgType: reflect.TypeFor[GetVAPlacement](), ArgSize: 16, Dir: DirWrite, Lane: LaneMisc, MatchByNr: true},
	{Name: "NEURON_IOCTL_GET_PERFORMANCE_PROFILE", Cmd: CmdGetPerformanceProfile, ArgType: reflect.TypeFor[PowerProfile](), ArgSize: 8, Dir: DirRead | DirWrite, Lane: LaneMain},
	{Name: "NEURON_IOCTL_AVAILABLE_PERF_PROFILES", Cmd: CmdAvailablePerfProfiles, ArgType: reflect.TypeFor[AvailablePerfProfiles](), ArgSize: 36, Dir: DirRead | DirWrite, Lane: LaneMain},
	{Name: "NEURON_IOCTL_GET_ASYNC_H2T_DMA_COMPL_QUEUES", Cmd: CmdGetAsyncH2TDMAComplQueues, ArgType: reflect.TypeFor[GetAsyncH2TDMAComplQueues](), ArgSize: 264, Dir: DirRead | DirWrite, Lane: LaneMain},
}
