package device

import (
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/neuronfs/neuronfs/ioctl"
)

// armedCall is an aimed fault in force: its calls counted since it was
// set.
type armedCall struct {
	callAim
	calls atomic.Uint64
}

// fires counts one call and says whether it fails: the k-th call's draw
// depends only on the seed and k, so the same seed fails the same calls
// whatever else runs between them.
func (a *armedCall) fires() bool {
	k := a.calls.Add(1)
	if a.bp != 0 {
		return splitmix64(a.seed+k*0x9e3779b97f4a7c15)%10000 < uint64(a.bp)
	}
	return k == a.nth || (a.repeat && k > a.nth)
}

// splitmix64 is Steele, Lea and Flood's output mix: a fixed, portable
// function, so a seed means the same calls on every machine and release.
func splitmix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// setAimed replaces (set) or removes the aimed fault on a's command; at
// most one is armed per command, and setting one starts its count.
func (f *Faults) setAimed(a callAim, set bool) {
	for {
		old := f.aimed.Load()
		var next []*armedCall
		if old != nil {
			next = slices.DeleteFunc(slices.Clone(*old), func(c *armedCall) bool { return c.macro == a.macro })
		}
		if set {
			next = append(next, &armedCall{callAim: a})
			slices.SortFunc(next, func(x, y *armedCall) int { return strings.Compare(x.macro.String(), y.macro.String()) })
		}
		if f.aimed.CompareAndSwap(old, &next) {
			return
		}
	}
}

// clearAimed disarms every aimed fault.
func (f *Faults) clearAimed() { f.aimed.Store(nil) }

// callFails counts a call of command m against the aimed faults and
// returns the errno it fails with, or 0.
func (f *Faults) callFails(m ioctl.Macro) syscall.Errno {
	list := f.aimed.Load()
	if list == nil {
		return 0
	}
	for _, a := range *list {
		if a.macro == m && a.fires() {
			return a.errno
		}
	}
	return 0
}

// aimedStatus lists the armed faults as fault-list items.
func (f *Faults) aimedStatus() []string {
	var out []string
	if list := f.aimed.Load(); list != nil {
		for _, a := range *list {
			out = append(out, a.String())
		}
	}
	return out
}
