package fs

// ReapRaw runs one pass of the raw-memory reaper now.
func (f *FS) ReapRaw() { f.reapRaw() }
