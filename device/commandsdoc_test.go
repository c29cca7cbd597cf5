package device

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/ioctl"
)

// commandRow matches the first cell of a generated command-table row.
var commandRow = regexp.MustCompile("^\\| `(NEURON_IOCTL_[A-Z0-9_]+)` \\|")

// TestCommandDocsCoverEveryCommand reads docs/commands/ as a user would:
// every command of every emulated version must be on exactly one page,
// and no page may list a command that no version has. (The pages are
// generated; scripts/test.sh checks that they are current.)
func TestCommandDocsCoverEveryCommand(t *testing.T) {
	want := map[string]bool{}
	for _, v := range ioctl.Versions() {
		tab, err := ioctl.ForVersion(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range tab.Commands() {
			want[c.Name] = true
		}
	}
	pages, err := filepath.Glob(filepath.Join("..", "docs", "commands", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no command pages in docs/commands (%v): run 'go generate ./device'", err)
	}
	onPage := map[string]string{}
	for _, p := range pages {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var listed []string
		for _, line := range strings.Split(string(text), "\n") {
			if m := commandRow.FindStringSubmatch(line); m != nil && !slices.Contains(listed, m[1]) {
				listed = append(listed, m[1]) // a command whose value changed has one row per value
			}
		}
		for _, name := range listed {
			if other, ok := onPage[name]; ok {
				t.Errorf("%s is listed on %s and %s", name, other, p)
			}
			onPage[name] = p
			if !want[name] {
				t.Errorf("%s lists %s, which no emulated driver version has", p, name)
			}
		}
	}
	for name := range want {
		if _, ok := onPage[name]; !ok {
			t.Errorf("%s is on no page of docs/commands: add it to a family in device/internal/docgen/families.go and run 'go generate ./device'", name)
		}
	}
}
