package device

// ControlAttributes are neuronfs's own files (not the driver's), under
// neuronfs/ at the mount root: faults, memory, cores, version and state
// (docs/control.md).
func (fs Sysfs) ControlAttributes() []Attr {
	s := fs.s
	return append([]Attr{s.faults.attr(),
		{Path: MemoryFile, Mode: 0o444, Show: fs.memoryStatus},
		{Path: CoresFile, Mode: 0o444, Show: fs.coresStatus}}, fs.stateAttributes()...)
}
