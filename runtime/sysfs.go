package runtime

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// SysfsDir lists the subdirectories of dir inside
// /sys/devices/virtual/neuron_device/neuronN, sorted: the metric
// counters, memory categories and cores, whose set differs between
// driver versions and architectures.
func (h Host) SysfsDir(index int, dir string) ([]string, error) {
	entries, err := os.ReadDir(h.path(fmt.Sprintf("sys/devices/virtual/neuron_device/neuron%d/%s", index, dir)))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// Cores lists the NeuronCore indices of device index from its
// neuron_coreC directories (readable without root, unlike core_count).
func (h Host) Cores(index int) ([]int, error) {
	dirs, err := h.SysfsDir(index, ".")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, d := range dirs {
		if n, ok := strings.CutPrefix(d, "neuron_core"); ok {
			if c, err := strconv.Atoi(n); err == nil {
				out = append(out, c)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// SysfsCounter reads a numeric attribute of device index, such as
// "neuron_core0/stats/other_info/inference_count/total".
func (h Host) SysfsCounter(index int, attr string) (uint64, error) {
	s, err := h.SysfsDevice(index, attr)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(s, 10, 64)
}
