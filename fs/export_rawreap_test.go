package fs

// ReapRaw waits for a pass of the raw-memory reaper that starts after the
// call.
func (f *FS) ReapRaw() { f.reaper.Load().Reclaim() }
