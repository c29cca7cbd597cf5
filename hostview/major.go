package hostview

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// FreeMajor picks a character major that no driver on this host owns,
// searching downward from 254 as the kernel's dynamic allocation does.
func FreeMajor() (uint32, error) {
	f, err := os.Open("/proc/devices")
	if err != nil {
		return 0, fmt.Errorf("read /proc/devices: %w", err)
	}
	defer f.Close()
	used := map[int]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "Block devices") {
			break
		}
		if fields := strings.Fields(line); len(fields) == 2 {
			if n, err := strconv.Atoi(fields[0]); err == nil {
				used[n] = true
			}
		}
	}
	for m := 254; m >= 234; m-- {
		if !used[m] {
			return uint32(m), nil
		}
	}
	for m := 511; m >= 384; m-- {
		if !used[m] {
			return uint32(m), nil
		}
	}
	return 0, fmt.Errorf("no free character major in /proc/devices")
}
