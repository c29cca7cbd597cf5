package runtime

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// EmulatorMemory is what a neuronfs mount reports of its device memory
// (its neuronfs/memory file): no real driver has it.
type EmulatorMemory struct {
	Backing string // memfd or file:DIR
	Limit   uint64 // bytes; 0: none
	Held    uint64 // bytes the backing holds, all devices
	Devices map[int]DeviceMemory
}

// DeviceMemory is one device's declared and held memory.
type DeviceMemory struct {
	Declared uint64 // the device's HBM
	Held     uint64 // what its backing holds now (RAM for memfd, disk for a file)
}

// EmulatorMemory reads the mount's memory report; an error means the
// root is not a neuronfs mount (a real host, or `run`'s view).
func (h Host) EmulatorMemory() (*EmulatorMemory, error) {
	b, err := os.ReadFile(h.path("neuronfs/memory"))
	if err != nil {
		return nil, err
	}
	m := &EmulatorMemory{Devices: map[int]DeviceMemory{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for first := true; sc.Scan(); first = false {
		f := strings.Fields(sc.Text())
		kv := map[string]string{}
		for _, x := range f {
			if k, v, ok := strings.Cut(x, "="); ok {
				kv[k] = v
			}
		}
		num := func(k string) uint64 { n, _ := strconv.ParseUint(kv[k], 10, 64); return n }
		if first {
			m.Backing, m.Limit, m.Held = kv["backing"], num("limit"), num("held")
			continue
		}
		var i int
		if len(f) == 0 {
			continue
		}
		if _, err := fmt.Sscanf(f[0], "neuron%d", &i); err != nil {
			return nil, fmt.Errorf("neuronfs/memory: bad line %q", sc.Text())
		}
		m.Devices[i] = DeviceMemory{Declared: num("declared"), Held: num("held")}
	}
	return m, nil
}
