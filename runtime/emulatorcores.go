package runtime

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// BlockedCore is a core a neuronfs mount reports as blocked in its
// neuronfs/cores file: a staged program whose running engines all wait,
// with nothing in flight to release them. No real driver reports it.
type BlockedCore struct {
	Device, Core int
	Waiting      []string // "PE waits at 0x1c0 (CTRL_ES(0xa0)) for semaphore 7 >= 1 (now 0)"
}

// EmulatorBlocked reads the mount's blocked cores; an error means the
// root is not a neuronfs mount.
func (h Host) EmulatorBlocked() ([]BlockedCore, error) {
	b, err := os.ReadFile(h.path("neuronfs/cores"))
	if err != nil {
		return nil, err
	}
	return parseBlocked(b), nil
}

// parseBlocked picks the blocked cores out of a cores file: a header
// "neuronD core N: blocked: ..." and its indented engine lines, of which
// the waiting ones, without their counts.
func parseBlocked(b []byte) []BlockedCore {
	var out []BlockedCore
	var cur *BlockedCore
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, " ") {
			cur = nil
			if dev, core, ok := coreHeader(line); ok && strings.Contains(line, ": blocked") {
				out = append(out, BlockedCore{Device: dev, Core: core})
				cur = &out[len(out)-1]
			}
			continue
		}
		if cur == nil || !strings.Contains(line, " waits at ") {
			continue
		}
		engine, _, _ := strings.Cut(strings.TrimSpace(line), "; records=")
		cur.Waiting = append(cur.Waiting, engine)
	}
	return out
}

// NotEmulatedCore is a core whose engines only counted some records of
// their program (the cores file's NOT EMULATED line): the program's
// results there were not computed. No real driver reports it.
type NotEmulatedCore struct {
	Device, Core         int
	NotEmulated, Records uint64
	Last                 []string // "on PE: MATMUL_SPARSE(0x07) at 0x4040: no source gives its effect"
}

// EmulatorNotEmulated reads the mount's cores that only counted records;
// an error means the root is not a neuronfs mount.
func (h Host) EmulatorNotEmulated() ([]NotEmulatedCore, error) {
	b, err := os.ReadFile(h.path("neuronfs/cores"))
	if err != nil {
		return nil, err
	}
	return parseNotEmulated(b), nil
}

// parseNotEmulated picks each core's "NOT EMULATED: N of M records" line
// and its "last on ENGINE: ..." lines out of a cores file.
func parseNotEmulated(b []byte) []NotEmulatedCore {
	var out []NotEmulatedCore
	dev, core := -1, -1
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, " ") {
			var ok bool
			if dev, core, ok = coreHeader(line); !ok {
				dev, core = -1, -1
			}
			continue
		}
		t := strings.TrimSpace(line)
		var ne, recs uint64
		switch {
		case dev < 0:
		case strings.HasPrefix(t, "NOT EMULATED: "):
			if n, _ := fmt.Sscanf(t, "NOT EMULATED: %d of %d records", &ne, &recs); n == 2 {
				out = append(out, NotEmulatedCore{Device: dev, Core: core, NotEmulated: ne, Records: recs})
			}
		case strings.HasPrefix(t, "last on ") && len(out) > 0:
			if l := &out[len(out)-1]; l.Device == dev && l.Core == core {
				l.Last = append(l.Last, strings.TrimPrefix(t, "last "))
			}
		}
	}
	return out
}

// coreHeader reads a core's header line, "neuronD core C:", exactly as
// the daemon writes it (Sscanf alone would take other spacing and signs).
func coreHeader(line string) (dev, core int, ok bool) {
	if n, _ := fmt.Sscanf(line, "neuron%d core %d:", &dev, &core); n != 2 {
		return 0, 0, false
	}
	return dev, core, strings.HasPrefix(line, fmt.Sprintf("neuron%d core %d:", dev, core))
}
