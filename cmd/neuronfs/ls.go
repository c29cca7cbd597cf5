package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/runtime"
)

// lsDevice is one row of `neuronfs ls`; the JSON names are the vendor
// tool's.
type lsDevice struct {
	Device      int         `json:"neuron_device"`
	BDF         string      `json:"bdf"`
	ConnectedTo []uint32    `json:"connected_to"`
	Cores       int         `json:"nc_count"`
	MemorySize  uint64      `json:"memory_size"`
	CoreIDs     []int       `json:"neuroncore_ids"`
	Processes   []lsProcess `json:"neuron_processes"`
	// MemoryHeld is what the emulator's backing holds of the device's
	// memory (not a vendor field; only on a neuronfs mount).
	MemoryHeld *uint64 `json:"neuronfs_memory_held,omitempty"`
	// NotEmulated are the device's cores whose engines only counted some
	// records of their program: results not computed (only on a neuronfs
	// mount, and only when there are some).
	NotEmulated []lsNotEmulated `json:"neuronfs_not_emulated,omitempty"`
}

type lsNotEmulated struct {
	Core        int      `json:"core"`
	NotEmulated uint64   `json:"not_emulated"`
	Records     uint64   `json:"records"`
	Last        []string `json:"last"`
}

type lsProcess struct {
	PID     int32  `json:"pid"`
	Command string `json:"command"`
}

func cmdLs(args []string) int {
	fl := newFlagSet("ls")
	asJSON := fl.Bool("json-output", false, "print JSON")
	root := fl.String("root", "/", "where the driver's dev/ and sys/ are (a 'neuronfs mount' point)")
	if status, ok := parseFlags("ls", fl, args); !ok {
		return status
	}
	if fl.NArg() != 0 {
		return usageLine("ls", fmt.Sprintf("unexpected argument %q", fl.Arg(0)))
	}
	devs, err := listDevices(runtime.Host{Root: *root})
	if err != nil {
		fmt.Fprintln(os.Stderr, "neuronfs ls:", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "    ")
		if err := enc.Encode(devs); err != nil {
			return 1
		}
		return 0
	}
	printDeviceTable(os.Stdout, devs)
	return 0
}

// listDevices gathers the table through the driver interface only.
func listDevices(h runtime.Host) ([]lsDevice, error) {
	indices, err := h.DeviceIndices()
	if err != nil {
		return nil, err
	}
	if len(indices) == 0 {
		return nil, fmt.Errorf("no neuron devices under %s", h.Root)
	}
	out := make([]lsDevice, 0, len(indices))
	emu, _ := h.EmulatorMemory()          // nil on a real host
	skipped, _ := h.EmulatorNotEmulated() // none on a real host
	coreBase := 0
	for _, i := range indices {
		row := lsDevice{Device: i, ConnectedTo: []uint32{}, CoreIDs: []int{}, Processes: []lsProcess{}}
		if s, err := h.SysfsDevice(i, "core_count"); err == nil {
			row.Cores, _ = strconv.Atoi(s)
		}
		if name, err := h.SysfsDevice(i, "info/architecture/instance_type"); err == nil {
			if p, err := dhal.LookupProduct(name); err == nil {
				if f, err := dhal.Facts(p.Arch); err == nil {
					row.MemorySize = f.HBMBytes()
				}
			}
		}
		if m, ok := emuDevice(emu, i); ok {
			row.MemoryHeld = &m.Held
		}
		for _, c := range skipped {
			if c.Device == i {
				row.NotEmulated = append(row.NotEmulated, lsNotEmulated{c.Core, c.NotEmulated, c.Records, c.Last})
			}
		}
		for c := 0; c < row.Cores; c++ {
			row.CoreIDs = append(row.CoreIDs, coreBase+c)
		}
		coreBase += row.Cores
		d, err := h.Open(i)
		if err != nil {
			return nil, err
		}
		if row.BDF, err = d.PCIAddress(); err == nil {
			row.BDF = strings.TrimPrefix(row.BDF, "0000:")
		}
		if nb, err := d.ConnectedDevices(); err == nil {
			row.ConnectedTo = nb
		}
		if apps, err := d.Apps(0); err == nil {
			for _, a := range apps {
				if int(a.PID) == os.Getpid() {
					continue // this listing's own open
				}
				row.Processes = append(row.Processes, lsProcess{PID: a.PID, Command: processName(a.PID)})
			}
		}
		d.Close()
		out = append(out, row)
	}
	return out, nil
}

func processName(pid int32) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// emuDevice returns device i's entry of an emulator's memory report.
func emuDevice(m *runtime.EmulatorMemory, i int) (runtime.DeviceMemory, bool) {
	if m == nil {
		return runtime.DeviceMemory{}, false
	}
	d, ok := m.Devices[i]
	return d, ok
}

func printDeviceTable(w io.Writer, devs []lsDevice) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	held := len(devs) > 0 && devs[0].MemoryHeld != nil
	if held {
		// An emulated host: what the backing holds beside what is declared.
		fmt.Fprintln(tw, "NEURON DEVICE\tNEURON CORES\tNEURON MEMORY\tHELD\tCONNECTED DEVICES\tPCI BDF\tPROCESSES")
	} else {
		fmt.Fprintln(tw, "NEURON DEVICE\tNEURON CORES\tNEURON MEMORY\tCONNECTED DEVICES\tPCI BDF\tPROCESSES")
	}
	for _, d := range devs {
		var nb, procs []string
		for _, n := range d.ConnectedTo {
			nb = append(nb, strconv.Itoa(int(n)))
		}
		for _, p := range d.Processes {
			procs = append(procs, fmt.Sprintf("%d %s", p.PID, p.Command))
		}
		mem := fmt.Sprintf("%d GB", d.MemorySize>>30)
		if held {
			mem += "\t" + formatBytes(derefOr(d.MemoryHeld))
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\n", d.Device, d.Cores, mem, strings.Join(nb, ", "), d.BDF, strings.Join(procs, "; "))
	}
	tw.Flush()
	// Below the table, so its columns stay the vendor's: results nobody
	// should trust.
	for _, d := range devs {
		for _, c := range d.NotEmulated {
			fmt.Fprintf(w, "neuron%d nc%d NOT EMULATED: %d of %d records only counted, results not computed (last %s)\n",
				d.Device, c.Core, c.NotEmulated, c.Records, strings.Join(c.Last, "; "))
		}
	}
}

func derefOr(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}
