package fs

// ReleaseGone releases at once the direct opens whose last reference went.
func (x *Direct) ReleaseGone() { x.releaseGone() }
