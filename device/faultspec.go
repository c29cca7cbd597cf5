package device

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The firmware faults, which take a value instead of on/off.
const (
	faultECCSRAM   = "ecc-sram"
	faultECCHBM    = "ecc-hbm"
	faultHBMRepair = "hbm-repair"
)

// hbmRepairStates are the firmware's HBM repair state values.
var hbmRepairStates = map[string]uint32{"none": 0, "pending": 1, "failed": 2}

// faultItem is one parsed entry of a fault list: a switch set on (1) or
// off (0), a firmware fault's value, or "none".
type faultItem struct {
	name string
	val  uint32
	aim  callAim // of an aimed fault (name faultCall)
}

// switchNames lists the on/off faults, sorted.
func switchNames() []string {
	var names []string
	for n := range (&Faults{}).switches() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// faultGrammar is what a fault list may hold, for error messages.
func faultGrammar() string {
	return strings.Join(switchNames(), ", ") + ", ecc-sram=N, ecc-hbm=N, hbm-repair=none|pending|failed, fail:CMD:ERRNO:N|N+|P%:SEED; -NAME or NAME=0 clears one, none clears all"
}

// CheckFaults reports the first mistake in a fault list (--inject, or a
// write to the faults control file) without applying anything.
func CheckFaults(spec string) error {
	_, err := parseFaults(spec)
	return err
}

// parseFaults reads a comma-separated fault list: NAME switches a fault
// on (NAME=1 too), -NAME or NAME=0 clears one, none clears every fault;
// ecc-sram=N and ecc-hbm=N set the uncorrected ECC counts on every
// device, hbm-repair=none|pending|failed the firmware's repair state;
// fail:CMD:ERRNO:... aims a failure at calls of one ioctl (callfault.go).
func parseFaults(spec string) ([]faultItem, error) {
	switches := (&Faults{}).switches()
	var items []faultItem
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if item == "none" {
			items = append(items, faultItem{name: "none"})
			continue
		}
		if rest, ok := strings.CutPrefix(strings.TrimPrefix(item, "-"), faultCall+":"); ok {
			clear := strings.HasPrefix(item, "-")
			a, err := parseCallFault(item, rest, clear)
			if err != nil {
				return nil, err
			}
			it := faultItem{name: faultCall, val: 1, aim: a}
			if clear {
				it.val = 0
			}
			items = append(items, it)
			continue
		}
		name, val, hasVal := strings.Cut(item, "=")
		name, clear := strings.CutPrefix(name, "-")
		if clear && hasVal {
			return nil, fmt.Errorf("fault %q: say -%s or %s=0", item, name, name)
		}
		_, isSwitch := switches[name]
		switch {
		case clear && (isSwitch || name == faultECCSRAM || name == faultECCHBM || name == faultHBMRepair):
			items = append(items, faultItem{name: name})
		case isSwitch && !hasVal:
			items = append(items, faultItem{name: name, val: 1})
		case isSwitch:
			if val != "0" && val != "1" {
				return nil, fmt.Errorf("fault %q: %s is on (1) or off (0)", item, name)
			}
			items = append(items, faultItem{name: name, val: uint32(val[0] - '0')})
		case name == faultHBMRepair && hasVal:
			v, ok := hbmRepairStates[val]
			if val == "0" {
				v, ok = 0, true
			}
			if !ok {
				return nil, fmt.Errorf("fault %q: want hbm-repair=none, pending or failed", item)
			}
			items = append(items, faultItem{name: name, val: v})
		case (name == faultECCSRAM || name == faultECCHBM) && hasVal:
			n, err := strconv.ParseUint(val, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("fault %q: want a count from 0 to 65535", item)
			}
			items = append(items, faultItem{name: name, val: uint32(n)})
		case name == faultECCSRAM || name == faultECCHBM || name == faultHBMRepair:
			return nil, fmt.Errorf("fault %q needs a value (want %s)", item, faultGrammar())
		default:
			return nil, fmt.Errorf("unknown fault %q (want %s)", item, faultGrammar())
		}
	}
	return items, nil
}
