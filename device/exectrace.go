package device

import "github.com/neuronfs/neuronfs/chip/exectrace"

// openExecTrace starts Config.ExecTrace's file, if one is asked for;
// every chip then traces into it (chipConfig).
func (s *System) openExecTrace(path string) error {
	if path == "" {
		return nil
	}
	w, err := exectrace.Create(path)
	if err != nil {
		return err
	}
	s.execTrace = w
	return nil
}

// traceDevice is device index's part of the trace; nil when none.
func (s *System) traceDevice(index int) *exectrace.Device {
	return s.execTrace.Device(index, deviceName(index))
}

// CloseExecTrace completes the trace file: Close does it once every chip
// stopped, and a daemon that exits without closing its system (engines
// may still run) calls it on the way out; what comes after is dropped.
func (s *System) CloseExecTrace() {
	if err := s.execTrace.Close(); err != nil {
		s.log.WithError(err).Warn("exec trace incomplete")
	}
}
