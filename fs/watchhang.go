package fs

import (
	"strings"

	"github.com/sirupsen/logrus"
)

// blockedFields adds to a slow request's log line the device's cores whose
// staged program hangs (chip.Chip.BlockedCores): a request that waits
// for an execution is slow because of them, and the line then says which
// engine waits at which record for what. Any slow request on the device
// gets them; only the scan asks, never a request's own goroutine.
func (w *watchdog) blockedFields(f logrus.Fields, r slowRequest) {
	if r.dev < 0 || r.dev >= len(w.f.sys.Devices) {
		return
	}
	hangs := w.f.sys.Devices[r.dev].Chip().BlockedCores()
	if len(hangs) == 0 {
		return
	}
	blocked := make([]string, len(hangs))
	for i, h := range hangs {
		blocked[i] = h.String()
	}
	f["blocked"] = strings.Join(blocked, " | ")
}
