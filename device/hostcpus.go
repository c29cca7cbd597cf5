package device

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// cpuSet is a set of the host's CPUs, as the kernel lists them.
type cpuSet struct {
	list  string // "0-3,8"
	cpus  []int
	nbits int // nr_cpu_ids: the width of a printed mask
}

// hostCPUs returns the host's online CPUs. An emulated function's
// local CPUs are all of them: the emulated host is the real one, and
// programs (hwloc) check the list against /sys/devices/system.
func hostCPUs() cpuSet {
	online := readCPUList("/sys/devices/system/cpu/online")
	possible := readCPUList("/sys/devices/system/cpu/possible")
	s := cpuSet{list: online, cpus: parseCPUList(online)}
	for _, c := range parseCPUList(possible) {
		s.nbits = max(s.nbits, c+1)
	}
	for _, c := range s.cpus {
		s.nbits = max(s.nbits, c+1)
	}
	return s
}

func readCPUList(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// parseCPUList reads a kernel CPU list such as "0-3,8".
func parseCPUList(list string) []int {
	var out []int
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out
}

// mask prints the set as the kernel prints a cpumask: hex words of 32
// CPUs separated by commas, most significant first, the first as wide
// as its CPUs need and the others 8 digits.
func (s cpuSet) mask() string {
	if s.nbits == 0 {
		return "0"
	}
	words := make([]uint32, (s.nbits+31)/32)
	for _, c := range s.cpus {
		words[c/32] |= 1 << (c % 32)
	}
	var parts []string
	for i := len(words) - 1; i >= 0; i-- {
		width := 8
		if i == len(words)-1 {
			width = ((s.nbits-1)%32)/4 + 1
		}
		parts = append(parts, fmt.Sprintf("%0*x", width, words[i]))
	}
	return strings.Join(parts, ",")
}
