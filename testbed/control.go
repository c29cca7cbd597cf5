package testbed

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/neuronfs/neuronfs/device"
)

// State is the control interface's state document (docs/control.md); it
// is device.HostState, whose fields are:
//
//	Version       int           // the control interface's version (1)
//	Instance      string        // the EC2 instance type, e.g. trn2.48xlarge
//	DriverVersion string        // the emulated driver, e.g. 2.25.4.0
//	Major         uint32        // the character major of /dev/neuronN
//	Faults        []string      // the faults that are on, as --inject names them
//	Devices       []DeviceState // one per device, by index
type State = device.HostState

// DeviceState is one device of a State (device.DeviceState):
//
//	Index      int               // N of /dev/neuronN
//	Name       string            // neuronN
//	State      string            // ready, reset (one in progress) or invalid (the last reset failed)
//	PIDs       []int32           // the processes attached, in the driver's slot order
//	Opens      int               // normal-descriptor opens not yet released
//	Resets     device.Resets     // Count of firmware resets, and how the Last ended: ok, failed or none
//	HostMemory map[string]uint64 // bytes held now per host-memory category
//	Cores      []device.CoreState // the active cores: memory, counters, semaphores, events, queues
type DeviceState = device.DeviceState

// InjectFaults writes a fault list to the control interface, in the
// syntax of `neuronfs --inject`: "reset-fail" switches a fault on,
// "-reset-fail" clears it, "none" clears all. A list with a mistake
// changes nothing and the error says why.
func (tb *Testbed) InjectFaults(list string) error {
	if tb.shadow != nil {
		// The filter view: no control directory here; the same store.
		if err := tb.sys.Faults().Apply(strings.TrimSpace(list)); err != nil {
			return fmt.Errorf("faults %q: %w", list, err)
		}
		return nil
	}
	path := filepath.Join(tb.Control(), device.FaultsFile)
	if err := os.WriteFile(path, []byte(list+"\n"), 0); err != nil {
		// The file's second line holds the reason of a rejected list.
		if b, rerr := os.ReadFile(path); rerr == nil {
			if _, why, ok := strings.Cut(strings.TrimSpace(string(b)), "\n# "); ok {
				return fmt.Errorf("faults %q: %s", list, why)
			}
		}
		return fmt.Errorf("faults %q: %w", list, err)
	}
	return nil
}

// ClearFaults switches every fault off.
func (tb *Testbed) ClearFaults() error { return tb.InjectFaults("none") }

// State reads the host's state through the control interface.
func (tb *Testbed) State() (State, error) {
	if tb.shadow != nil {
		return tb.sys.State(), nil // the filter view: as the state file shows it
	}
	var st State
	b, err := os.ReadFile(filepath.Join(tb.Control(), device.StateFile))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("state: %w", err)
	}
	if st.Version != device.ControlVersion {
		return st, fmt.Errorf("state: control interface version %d, this package reads %d", st.Version, device.ControlVersion)
	}
	return st, nil
}

// Budget is how long WaitFor waits: the driver's budget for a reset (the
// longest thing a device does on its own), with slack for a busy machine.
func (tb *Testbed) Budget() time.Duration { return tb.sys.OpenBudget() }

// WaitFor polls the state until cond holds and returns that state; it
// gives up after Budget, or when ctx ends, with the last state seen.
func (tb *Testbed) WaitFor(ctx context.Context, cond func(State) bool) (State, error) {
	ctx, cancel := context.WithTimeout(ctx, tb.Budget())
	defer cancel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		st, err := tb.State()
		if err != nil {
			return st, err
		}
		if cond(st) {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("testbed: condition not met: %w", ctx.Err())
		case <-tick.C:
		}
	}
}
