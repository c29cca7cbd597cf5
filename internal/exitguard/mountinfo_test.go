package exitguard

import "testing"

func TestParseMountLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want mountEntry
		ok   bool
	}{
		{"45 27 0:48 / /tmp/x/mnt rw,nosuid - fuse.neuronfs neuronfs rw,user_id=0", mountEntry{45, 0, 48, "/tmp/x/mnt", "fuse.neuronfs"}, true},
		{"52 27 7:3 / /tmp/a\\040b/xfs rw shared:9 - xfs /dev/loop3 rw", mountEntry{52, 7, 3, "/tmp/a b/xfs", "xfs"}, true},
		{"x 27 0:48 / /m rw - tmpfs t rw", mountEntry{}, false},
		{"", mountEntry{}, false},
	} {
		got, ok := parseMountLine(tc.line)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseMountLine(%q) = %+v %v, want %+v %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
	if !(mountEntry{fstype: "fuse.neuronfs"}).fuse() || (mountEntry{fstype: "fuseblk2"}).fuse() || !(mountEntry{fstype: "fuse"}).fuse() || !(mountEntry{fstype: "fuseblk"}).fuse() {
		t.Error("fuse() misjudges a type")
	}
}
