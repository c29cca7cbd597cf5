package main

import (
	"runtime/debug"
	"testing"
)

// The revision and the modified mark appear once, whether or not the
// module version (a pseudo-version from a clone) carries them already.
func TestVersionNamesRevisionOnce(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	settings := []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}
	for _, c := range []struct{ main, want string }{
		{"", "(devel) 0123456789ab+dirty"},
		{"(devel)", "(devel) 0123456789ab+dirty"},
		{"v0.0.0-20261205120000-0123456789ab+dirty", "v0.0.0-20261205120000-0123456789ab+dirty"},
		{"v1.2.3", "v1.2.3 0123456789ab+dirty"},
	} {
		bi := &debug.BuildInfo{Main: debug.Module{Version: c.main}, Settings: settings}
		if got := versionOf(bi); got != c.want {
			t.Errorf("module version %q: %q, want %q", c.main, got, c.want)
		}
	}
}
