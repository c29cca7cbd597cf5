package fs

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// fatalSignalPending reports whether SIGTERM or SIGKILL is pending for the
// thread itself, from /proc/<tid>/status. The driver looks at the
// thread's private set only (current->pending); a fatal signal sent to a
// process lands there too, as SIGKILL on every thread.
func fatalSignalPending(tid int32) bool {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return true // the task is gone: nobody is waiting any more
	}
	defer f.Close()
	const fatal = 1<<(9-1) | 1<<(15-1) // SIGKILL, SIGTERM
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != "SigPnd" {
			continue
		}
		if mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && mask&fatal != 0 {
			return true
		}
	}
	return false
}
