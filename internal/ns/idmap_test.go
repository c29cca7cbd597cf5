package ns

import (
	"os"
	"path/filepath"
	"testing"
)

// An id is mapped when a line of the map covers it; without the file
// (no user namespaces) every id is.
func TestMapped(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	initial := write("init", "         0          0 4294967295\n")
	rootless := write("rootless", "         0       1000          1\n")
	two := write("two", "0 1000 1\n100 200000 65536\n")
	for _, c := range []struct {
		file string
		id   uint32
		want bool
	}{
		{initial, 0, true},
		{initial, 65534, true},
		{rootless, 0, true},
		{rootless, 65534, false}, // the overflow id of an unmapped owner
		{rootless, 1, false},
		{two, 100, true},
		{two, 65635, true},
		{two, 65636, false},
		{filepath.Join(dir, "absent"), 7, true},
	} {
		if got := mapped(c.file, c.id); got != c.want {
			t.Errorf("mapped(%s, %d) = %v, want %v", filepath.Base(c.file), c.id, got, c.want)
		}
	}
}
