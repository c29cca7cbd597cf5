package codecheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// codeSpan is a Markdown code span: `text`.
var codeSpan = regexp.MustCompile("`([^`\\s]+)`")

// repoPath matches what reads as a path in the repository: a top-level
// directory name, a slash, and more path characters (a glob's * allowed).
var repoPath = regexp.MustCompile(`^[a-z][a-z0-9_-]*/[A-Za-z0-9_.*/-]*$`)

// repoPaths lists the code spans of a Markdown text that name a path
// under one of the repository's top-level directories, with any
// ":line" or "#anchor" suffix dropped.
func repoPaths(text string, tops map[string]bool) []string {
	var paths []string
	for _, m := range codeSpan.FindAllStringSubmatch(text, -1) {
		p, _, _ := strings.Cut(m[1], ":")
		p, _, _ = strings.Cut(p, "#")
		if !repoPath.MatchString(p) || !tops[strings.SplitN(p, "/", 2)[0]] {
			continue
		}
		paths = append(paths, strings.TrimSuffix(p, "/"))
	}
	return paths
}

// topDirs lists the repository's top-level directories.
func topDirs(t *testing.T, root string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	tops := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			tops[e.Name()] = true
		}
	}
	return tops
}

// markdownUnder lists the Markdown files under dir, at any depth.
func markdownUnder(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestDocPathsExist: every repository path the documents (docs/, the
// READMEs) name in a code span (`chip/mmio/fwio.go`, `ioctl/abi`)
// exists, so a moved file cannot leave a stale name behind.
func TestDocPathsExist(t *testing.T) {
	root := moduleRoot(t)
	tops := topDirs(t, root)
	docs := markdownUnder(t, filepath.Join(root, "docs"))
	docs = append(docs, filepath.Join(root, "README.md"), filepath.Join(root, "deploy", "README.md"))
	checked := 0
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		for _, p := range repoPaths(string(data), tops) {
			checked++
			if m, _ := filepath.Glob(filepath.Join(root, p)); len(m) == 0 {
				t.Errorf("%s names `%s`, which does not exist", rel, p)
			}
		}
	}
	t.Logf("%d paths checked", checked)
	if checked < 50 {
		t.Errorf("checked only %d paths: the pattern misses them", checked)
	}
}

// The pattern takes paths and leaves other code spans alone.
func TestRepoPathsPattern(t *testing.T) {
	tops := map[string]bool{"chip": true, "ioctl": true, "docs": true}
	text := "`chip/mmio/fwio.go:12` `ioctl/abi_*_gen.go` `docs/commands/` `/dev/neuron0` `dev/neuronN` `chip.Core` `MOUNT/neuronfs/faults` `chip/core.go#L3`"
	got := repoPaths(text, tops)
	want := []string{"chip/mmio/fwio.go", "ioctl/abi_*_gen.go", "docs/commands", "chip/core.go"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("repoPaths = %q, want %q", got, want)
	}
}
