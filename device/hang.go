package device

// BlockedCores describes each core of d whose staged program hangs (see
// chip.Hang): which engine waits at which record for what. The slow-request
// log and the cores file report them; empty when none is blocked.
func (d *Device) BlockedCores() []string {
	var out []string
	for nc := 0; nc < d.sys.Arch.CoresPerDevice && nc < maxCoreSlots; nc++ {
		if h, ok := d.chip.Blocked(nc); ok {
			out = append(out, h.String())
		}
	}
	return out
}
