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
			var dev, core int
			if n, _ := fmt.Sscanf(line, "neuron%d core %d:", &dev, &core); n == 2 && strings.Contains(line, ": blocked") {
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
