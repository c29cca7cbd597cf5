package fs

// ReleaseGone releases at once the direct opens whose last reference went.
func (x *Direct) ReleaseGone() {
	for _, d := range x.devs {
		x.releaseGone(d)
	}
}
