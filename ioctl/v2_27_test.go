package ioctl

import (
	"testing"
	"unsafe"
)

// The 2.27.4.0 arguments against their C layouts on x86_64.
func TestLayouts2_27(t *testing.T) {
	var va GetVAPlacement
	var ap AvailablePerfProfiles
	var cq GetAsyncH2TDMAComplQueues
	for _, c := range []struct {
		what      string
		got, want uintptr
	}{
		{"sizeof get_va_placement", unsafe.Sizeof(va), 16},
		{"device_index", unsafe.Offsetof(va.DeviceIndex), 8},
		{"hbm_index", unsafe.Offsetof(va.HBMIndex), 12},
		{"sizeof throttling_notifications", unsafe.Sizeof(ThrottlingNotifications{}), 4},
		{"sizeof available_perf_profiles", unsafe.Sizeof(ap), 36},
		{"num_profiles", unsafe.Offsetof(ap.NumProfiles), 2},
		{"bitmap", unsafe.Offsetof(ap.Bitmap), 3},
		{"sizeof get_async_h2t_dma_compl_queues", unsafe.Sizeof(cq), 264},
		{"compl_queue_info", unsafe.Offsetof(cq.ComplQueueInfo), 8},
		{"sizeof compl queue info", unsafe.Sizeof(cq.ComplQueueInfo[0]), 16},
		{"mmap_size", unsafe.Offsetof(cq.ComplQueueInfo[0].MmapSize), 8},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.what, c.got, c.want)
		}
	}
	tab, err := ForVersion("2.27.4.0")
	if err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[uint32]uint32{
		CmdThrottlingNotifications: 0x40044e82, CmdGetVAPlacement: 0x40104e83, CmdGetPerformanceProfile: 0xc0084e84,
		CmdAvailablePerfProfiles: 0xc0244e86, CmdGetAsyncH2TDMAComplQueues: 0xc1084e87,
	} {
		if cmd != want {
			t.Errorf("command %#x, want %#x", cmd, want)
		}
		if _, ok := tab.Lookup(cmd); !ok {
			t.Errorf("2.27.4.0 lacks %#x", cmd)
		}
		if _, ok := Default().Lookup(cmd); ok {
			t.Errorf("2.25.4.0 has %#x", cmd)
		}
	}
	if len(tab.Commands()) != len(Default().Commands())+5 {
		t.Errorf("2.27.4.0 has %d commands, 2.25.4.0 %d", len(tab.Commands()), len(Default().Commands()))
	}
}
