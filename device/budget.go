package device

import (
	"time"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/pod"
)

// Request budgets: how long the driver lets each command (and open and
// flush) run before it gives up on its own, from the driver's constants
// that the handlers use. A request that runs much longer than its budget
// is stuck in the emulation, not waiting as the driver would, and the
// transport's watchdog reports it (see fs's slow-request log). This file
// and each command's row (commands.go) say which is whose.

// budgetSlack is added to every budget (on top of half the budget) so
// that a loaded machine, or one running the race detector, does not make
// a request that waits out its full driver budget look stuck.
const budgetSlack = time.Second

// defaultBudget covers every command that does not wait: the driver
// answers them in microseconds.
const defaultBudget = time.Second

// copyBudget is the driver's least wait for a buffer copy, a memset or an
// async-copy wait (minCopyWait). The driver adds 80 ms per 64 KiB
// descriptor beyond that, which the command value alone does not tell;
// the emulated engines move gigabytes per second, so the floor covers
// every copy short of several GiB.
const copyBudget = minCopyWait

// podBudget is one exchange with the pod coordinator, the longest a pod
// command can be held up by a running election.
const podBudget = pod.RPCTimeout

// withSlack is what the watchdog allows a request whose driver budget is b.
func withSlack(b time.Duration) time.Duration { return b + b/2 + budgetSlack }

// budgets answers for the watchdog: the command table of the emulated
// driver version and the driver's reset wait, which the time scale and
// the firmware's reset latency fix at NewSystem.
type budgets struct {
	table *ioctl.Table
	reset time.Duration // see newBudgets
}

// newBudgets bounds a wait for a reset: the driver's wait for the
// firmware to take the request, its reads of the status after it (0+1+2+
// 3+4 sleeps), both scaled, and the emulation's floor for the latter. A
// waiter may queue behind a reset in progress: two.
func newBudgets(table *ioctl.Table, arch *dhal.ArchFacts, scaled func(time.Duration) time.Duration, resetLatency time.Duration) budgets {
	sleeps := time.Duration(0)
	for i := range dhal.ResetCompletionReads {
		sleeps += time.Duration(i) * dhal.ResetCompletionSleepsStep
	}
	one := scaled(arch.ResetInitiateMaxWait) + max(scaled(sleeps), minResetWait) + resetLatency
	return budgets{table: table, reset: 2 * one}
}

// Budget returns how long an ioctl with command value cmd may run before
// the daemon reports it as slow: the driver's own budget for the command
// plus a slack. Commands unknown to the emulated driver version get the
// default budget.
func (s *System) Budget(cmd uint32) time.Duration {
	return withSlack(s.budgets.driver(cmd))
}

// OpenBudget is Budget for an open of a device node: the driver's open
// waits while the device is in reset.
func (s *System) OpenBudget() time.Duration { return withSlack(s.budgets.reset) }

// FlushBudget is Budget for the flush of a device file: a process's last
// flush waits for the reset it asked for, for the cores' runs when it was
// the last process (orphanruns.go), then releases what it held.
func (s *System) FlushBudget() time.Duration { return withSlack(s.budgets.reset + stopRunsWait) }

// ReleaseBudget is Budget for the release of a device file, which never
// waits.
func (s *System) ReleaseBudget() time.Duration { return withSlack(defaultBudget) }

// CommandName returns the macro name of command value cmd in the emulated
// driver version (matching the families the driver routes by _IOC_NR), or
// "" when the version has no such command.
func (s *System) CommandName(cmd uint32) string {
	if c := s.budgets.command(cmd); c != nil {
		return c.Name
	}
	return ""
}

// command finds cmd by exact value, then as a member of an _IOC_NR family.
func (b budgets) command(cmd uint32) *ioctl.Command {
	if c, ok := b.table.Lookup(cmd); ok {
		return c
	}
	for _, c := range b.table.ByNr(ioctl.Nr(cmd)) {
		if c.MatchByNr {
			return c
		}
	}
	return nil
}

// budgetClass names one of the driver's budgets; a command's row
// (commands.go) says which is its own.
type budgetClass uint8

const (
	budgetDefault    budgetClass = iota // answers in microseconds: defaultBudget
	budgetReset                         // waits out a reset: budgets.reset
	budgetCRWLReader                    // crwlReaderWait
	budgetCRWLWriter                    // crwlWriterWait
	budgetCInit                         // cinitWait
	budgetCopy                          // copyBudget
	budgetPod                           // podBudget
)

// of is the duration of budget class c.
func (b budgets) of(c budgetClass) time.Duration {
	switch c {
	case budgetReset:
		return b.reset
	case budgetCRWLReader:
		return crwlReaderWait
	case budgetCRWLWriter:
		return crwlWriterWait
	case budgetCInit:
		return cinitWait
	case budgetCopy:
		return copyBudget
	case budgetPod:
		return podBudget
	}
	return defaultBudget
}

// driver is the driver's budget for cmd, without slack.
func (b budgets) driver(cmd uint32) time.Duration {
	if c := b.command(cmd); c != nil {
		return b.of(commands[c.Macro].budget)
	}
	return defaultBudget
}
