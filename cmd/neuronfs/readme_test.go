package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's usage-error example is what neuronfs prints, whole, and
// its exit-status rule names both commands that return CMD's status.
func TestDocUsageErrorExample(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	_, after, ok := strings.Cut(readme, "A usage error is one\nline naming the mistake")
	if !ok {
		_, after, ok = strings.Cut(readme, "A usage error is one line naming the mistake")
	}
	_, block, ok2 := strings.Cut(after, "```\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("the README has no usage-error example after \"A usage error is one line naming the mistake\"")
	}
	runs := strings.Split(block, "$ neuronfs ")[1:]
	if len(runs) == 0 {
		t.Fatalf("no '$ neuronfs' command in the example:\n%s", block)
	}
	for _, r := range runs {
		cmdline, want, _ := strings.Cut(r, "\n")
		stdout, stderr, status := inProcess(t, strings.Fields(cmdline)...)
		if status != exitUsage || stdout != "" || stderr != want {
			t.Errorf("neuronfs %s: status %d, stdout %q, stderr\n%s\nthe README shows\n%s", cmdline, status, stdout, stderr, want)
		}
	}
	for _, doc := range []struct{ name, text, want string }{
		{"README", readme, "`run` and `trace -- CMD` exit with CMD's status"},
		{"neuronfs help", usage, "'run' and\n'trace -- CMD' return CMD's"},
	} {
		if !strings.Contains(doc.text, doc.want) {
			t.Errorf("%s's exit-status rule lacks %q", doc.name, doc.want)
		}
	}
}

// Every test the README's table of verified software names exists in
// this package, so a row's check cannot silently go away.
func TestDocVerifiedSoftwareTests(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(b), "\n## What works with it\n")
	table, _, _ = strings.Cut(table, "\n## ")
	var src strings.Builder
	files, _ := filepath.Glob("*_test.go")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		src.Write(b)
	}
	named := 0
	for _, m := range regexp.MustCompile("go test -run '?([A-Za-z|\\\\]+)'? ./cmd/neuronfs").FindAllStringSubmatch(table, -1) {
		for _, name := range strings.Split(strings.ReplaceAll(m[1], `\|`, "|"), "|") {
			named++
			if !strings.Contains(src.String(), "\nfunc "+name+"(t *testing.T)") {
				t.Errorf("the README's table names %s, which cmd/neuronfs does not have", name)
			}
		}
	}
	if named < 4 {
		t.Fatalf("the README's table names %d tests; want a command per checked row", named)
	}
}
