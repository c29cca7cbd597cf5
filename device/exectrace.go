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

// closeExecTrace completes the trace file once every chip stopped: no
// engine or queue writes to it any more.
func (s *System) closeExecTrace() {
	if err := s.execTrace.Close(); err != nil {
		s.log.WithError(err).Warn("exec trace incomplete")
	}
}
