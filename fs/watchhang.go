package fs

import (
	"strings"

	"github.com/sirupsen/logrus"
)

// blockedFields adds to a slow request's log line the device's cores whose
// staged program hangs (device.Device.BlockedCores): a request that waits
// for an execution is slow because of them, and the line then says which
// engine waits at which record for what. Any slow request on the device
// gets them; only the scan asks, never a request's own goroutine.
func (w *watchdog) blockedFields(f logrus.Fields, r slowRequest) {
	if r.dev < 0 || r.dev >= len(w.f.sys.Devices) {
		return
	}
	if blocked := w.f.sys.Devices[r.dev].BlockedCores(); len(blocked) > 0 {
		f["blocked"] = strings.Join(blocked, " | ")
	}
}
