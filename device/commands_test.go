package device

import (
	"testing"

	"github.com/neuronfs/neuronfs/ioctl"
)

// Every command of every emulated driver version has its one row, and
// what dispatch, the watchdog and the transports are told of a command
// value is that row's, whatever value the version gives the macro.
func TestCommandRows(t *testing.T) {
	for _, v := range ioctl.Versions() {
		s, err := NewSystem(Config{Instance: "trn2.3xlarge", DriverVersion: v})
		if err != nil {
			t.Fatalf("driver %s: %v", v, err)
		}
		t.Cleanup(s.Close)
		for _, c := range s.Table.Commands() {
			row, ok := commands[c.Macro]
			if !ok {
				t.Errorf("driver %s: %s has no row in commands", v, c.Name)
				continue
			}
			if got := s.Inline(c.Cmd); got != row.inline {
				t.Errorf("driver %s: Inline(%s = %#x) = %v, its row says %v", v, c.Name, c.Cmd, got, row.inline)
			}
			if got, want := s.Budget(c.Cmd), withSlack(s.budgets.of(row.budget)); got != want {
				t.Errorf("driver %s: Budget(%s) = %v, its row says %v", v, c.Name, got, want)
			}
		}
	}
}

// A row that leaves the queue is one that waits; one that waits and stays
// on it only waits for its own copy. Whether it stays is the row's word,
// not a comparison of budgets.
func TestCommandRowsAgree(t *testing.T) {
	for m, row := range commands {
		if !row.inline && !row.waits {
			t.Errorf("%s: off the queue but never waits", m)
		}
		if row.inline && row.waits && row.budget != budgetCopy {
			t.Errorf("%s: waits on the queue with budget class %d, not a copy's", m, row.budget)
		}
		if !row.waits && row.budget != budgetDefault {
			t.Errorf("%s: never waits, yet has budget class %d", m, row.budget)
		}
	}
}
