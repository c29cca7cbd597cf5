package device

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/ioctl"
)

// Aimed faults make calls of one ioctl command fail with an errno: the
// N-th call only, the N-th and every later one, or each call with a
// probability drawn from a seed, so a test can aim at one allocation of
// many ("the 3rd MEM_ALLOC fails with ENOMEM") and replay a random run.
// A failing call returns before the driver's handler runs: it changes
// nothing, as a driver failing at its entry would.

// faultCall starts an aimed fault's item: fail:CMD:ERRNO:N, fail:CMD:ERRNO:N+
// or fail:CMD:ERRNO:P%:SEED; -fail:CMD clears it.
const faultCall = "fail"

// callAim is one parsed aimed fault (comparable, for the fuzz target).
type callAim struct {
	macro  ioctl.Macro
	errno  syscall.Errno
	nth    uint64 // counted: the first call that fails, from 1
	repeat bool   // counted: every call from the nth on fails
	bp     uint32 // random: the chance of each call in hundredths of a percent (1..10000)
	seed   uint64 // random: the draws' seed
}

// CallFault describes an aimed fault; String gives its fault-list item.
type CallFault struct {
	Command string        // the ioctl, e.g. "MEM_ALLOC" (NEURON_IOCTL_ may be left out)
	Errno   syscall.Errno // what the call fails with
	Nth     uint64        // the first call that fails, counted from 1 when the fault is set
	Repeat  bool          // every call from the Nth on fails, not the Nth only
	// Percent, if not 0, replaces Nth: each call fails with this
	// chance (0.01 to 100, two decimals), drawn from Seed.
	Percent float64
	Seed    uint64
}

// String is the fault-list item, e.g. "fail:MEM_ALLOC:ENOMEM:3".
func (c CallFault) String() string {
	name := strings.TrimPrefix(strings.ToUpper(c.Command), ioctl.MacroPrefix)
	head := fmt.Sprintf("%s:%s:%s:", faultCall, name, errnoString(c.Errno))
	if c.Percent != 0 {
		return head + strconv.FormatFloat(c.Percent, 'f', -1, 64) + "%:" + strconv.FormatUint(c.Seed, 10)
	}
	if c.Repeat {
		return head + strconv.FormatUint(c.Nth, 10) + "+"
	}
	return head + strconv.FormatUint(c.Nth, 10)
}

// errnoNames maps errno names (ENOMEM) to values, with the driver's own
// ENOTSUPP, which libc has no name for.
var errnoNames = sync.OnceValue(func() map[string]syscall.Errno {
	m := map[string]syscall.Errno{"ENOTSUPP": ioctl.ENOTSUPP}
	for e := syscall.Errno(1); e < 512; e++ {
		if n := unix.ErrnoName(e); n != "" {
			m[n] = e
		}
	}
	return m
})

func errnoString(e syscall.Errno) string {
	if e == ioctl.ENOTSUPP {
		return "ENOTSUPP"
	}
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return strconv.Itoa(int(e))
}

// parseCallFault reads what follows "fail:" in an item; clear is -fail:CMD.
func parseCallFault(item, rest string, clear bool) (callAim, error) {
	parts := strings.Split(rest, ":")
	var a callAim
	m, ok := ioctl.MacroNamed(parts[0])
	if !ok || parts[0] == "" {
		return a, fmt.Errorf("fault %q: no ioctl named %q (want a name such as MEM_ALLOC)", item, parts[0])
	}
	a.macro = m
	switch {
	case clear && len(parts) == 1:
		return a, nil
	case clear:
		return a, fmt.Errorf("fault %q: say -%s:%s", item, faultCall, parts[0])
	case len(parts) != 3 && len(parts) != 4:
		return a, fmt.Errorf("fault %q: want %s:CMD:ERRNO:N, N+ or P%%:SEED", item, faultCall)
	}
	e, ok := errnoNames()[strings.ToUpper(parts[1])]
	if !ok {
		return a, fmt.Errorf("fault %q: %q is not an errno name (want e.g. ENOMEM)", item, parts[1])
	}
	a.errno = e
	if len(parts) == 4 {
		return a.parseRandom(item, parts[2], parts[3])
	}
	n, repeat := strings.CutSuffix(parts[2], "+")
	v, err := strconv.ParseUint(n, 10, 64)
	if err != nil || v == 0 {
		return a, fmt.Errorf("fault %q: want the call to fail as N (the N-th only) or N+ (the N-th on), N from 1", item)
	}
	a.nth, a.repeat = v, repeat
	return a, nil
}

// parseRandom reads P% (0.01 to 100, at most two decimals) and a seed.
func (a callAim) parseRandom(item, pct, seed string) (callAim, error) {
	p, ok := strings.CutSuffix(pct, "%")
	whole, frac, hasFrac := strings.Cut(p, ".")
	w, err := strconv.ParseUint(whole, 10, 8)
	var f uint64
	if err == nil && hasFrac {
		if len(frac) == 1 {
			frac += "0"
		}
		f, err = strconv.ParseUint(frac, 10, 8)
		if len(frac) != 2 {
			err = strconv.ErrSyntax
		}
	}
	bp := w*100 + f
	if !ok || err != nil || bp == 0 || bp > 10000 {
		return a, fmt.Errorf("fault %q: want a chance from 0.01%% to 100%%, e.g. 25%%", item)
	}
	s, err := strconv.ParseUint(seed, 10, 64)
	if err != nil {
		return a, fmt.Errorf("fault %q: want a seed from 0 to %d", item, uint64(1<<64-1))
	}
	a.bp, a.seed = uint32(bp), s
	return a, nil
}

// String is the aimed fault in its plainest form, as the faults file
// shows it.
func (a callAim) String() string {
	name := strings.TrimPrefix(a.macro.String(), ioctl.MacroPrefix)
	head := fmt.Sprintf("%s:%s:%s:", faultCall, name, errnoString(a.errno))
	switch {
	case a.bp != 0:
		pct := strconv.Itoa(int(a.bp / 100))
		if f := a.bp % 100; f%10 == 0 && f != 0 {
			pct += fmt.Sprintf(".%d", f/10)
		} else if f != 0 {
			pct += fmt.Sprintf(".%02d", f)
		}
		return head + pct + "%:" + strconv.FormatUint(a.seed, 10)
	case a.repeat:
		return fmt.Sprintf("%s%d+", head, a.nth)
	}
	return fmt.Sprintf("%s%d", head, a.nth)
}
