package abi

// Pointer members whose buffer length another member gives as a count of
// elements (the general rule, a void buffer sized by a "size" member,
// does not cover them): struct name -> pointer member -> rule.
type arrayRule struct {
	count string // the member holding the element count (or byte count, elem 1)
	elem  int    // bytes per element
}

var arrayRules = map[string]map[string]arrayRule{
	"neuron_ioctl_dma_copy_descriptors":   {"buffer": {"num_descs", 16}},
	"neuron_ioctl_dma_copy_descriptors64": {"buffer": {"num_descs", 16}},
	"neuron_ioctl_dma_descriptor_copyout": {"buffer": {"count", 16}},
	"neuron_ioctl_bar_rw":                 {"address": {"count", 8}, "data": {"count", 4}},
	"neuron_ioctl_read_hw_counters":       {"address": {"count", 8}, "data": {"count", 4}},
	"neuron_ioctl_post_metric":            {"data": {"data_size", 1}},
}

// arrayLen applies the array rules; ok is false when none covers f.
func arrayLen(s Struct, f Field, arg []byte) (n int, ok bool) {
	rule, ok := arrayRules[s.Name][f.Name]
	if !ok {
		return 0, false
	}
	for _, g := range s.Fields {
		if g.Name == rule.count {
			v, ok := Uint(arg, g)
			if !ok || v > 1<<30/uint64(rule.elem) {
				return 0, true
			}
			return int(v) * rule.elem, true
		}
	}
	return 0, true
}
