package abi

// Driver 2.27.4.0's five new argument structs (x86_64), which the
// generated tables, made from the 2.25.4.0 reference, lack. The layouts
// match ioctl/v2_27.go.
var structs2_27 = map[string]Struct{
	"neuron_ioctl_throttling_notifications": {Name: "neuron_ioctl_throttling_notifications", Size: 4, Fields: []Field{
		{Name: "enable", Offset: 0, Size: 4, CType: "__u32"},
	}},
	"neuron_ioctl_get_va_placement": {Name: "neuron_ioctl_get_va_placement", Size: 16, Fields: []Field{
		{Name: "va", Offset: 0, Size: 8, CType: "__u64"},
		{Name: "device_index", Offset: 8, Size: 4, CType: "__s32"},
		{Name: "hbm_index", Offset: 12, Size: 4, CType: "__s32"},
	}},
	"neuron_ioctl_available_perf_profiles": {Name: "neuron_ioctl_available_perf_profiles", Size: 36, Fields: []Field{
		{Name: "requested_feature", Offset: 0, Size: 2, CType: "__u16"},
		{Name: "num_profiles", Offset: 2, Size: 1, CType: "__u8"},
		{Name: "bitmap", Offset: 3, Size: 32, CType: "__u8[32]"},
	}},
	"neuron_ioctl_get_async_h2t_dma_compl_queues": {Name: "neuron_ioctl_get_async_h2t_dma_compl_queues", Size: 264, Fields: []Field{
		{Name: "nc_id", Offset: 0, Size: 4, CType: "__u32"},
		{Name: "qid_bitmap", Offset: 4, Size: 4, CType: "__u32"},
		{Name: "compl_queue_info", Offset: 8, Size: 256, CType: "struct neuron_h2t_compl_queue_info[16]"},
	}},
}

var commandArgs2_27 = map[string]string{
	"NEURON_IOCTL_THROTTLING_NOTIFICATIONS":       "neuron_ioctl_throttling_notifications",
	"NEURON_IOCTL_GET_VA_PLACEMENT":               "neuron_ioctl_get_va_placement",
	"NEURON_IOCTL_GET_PERFORMANCE_PROFILE":        "neuron_ioctl_power_profile",
	"NEURON_IOCTL_AVAILABLE_PERF_PROFILES":        "neuron_ioctl_available_perf_profiles",
	"NEURON_IOCTL_GET_ASYNC_H2T_DMA_COMPL_QUEUES": "neuron_ioctl_get_async_h2t_dma_compl_queues",
}
