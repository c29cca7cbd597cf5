package ns

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// mapped reports whether id (as this process sees it, i.e. its overflow
// id when unmapped) has a mapping in the id map file (/proc/self/uid_map
// or gid_map: "inside outside count" lines). Without the file (no user
// namespaces in the kernel) every id is mapped.
func mapped(file string, id uint32) bool {
	f, err := os.Open(file)
	if err != nil {
		return true
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) != 3 {
			continue
		}
		inside, err1 := strconv.ParseUint(fl[0], 10, 32)
		count, err2 := strconv.ParseUint(fl[2], 10, 64)
		if err1 == nil && err2 == nil && uint64(id) >= inside && uint64(id) < inside+count {
			return true
		}
	}
	return false
}
