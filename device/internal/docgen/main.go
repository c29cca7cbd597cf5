// Command docgen writes docs/commands/: one page per command family,
// merging the facts of the one ABI description (ioctl/) and which macros
// device/ emulates with hand-written notes (docs/commands/notes/), so the
// pages cannot drift from the code and the notes are never overwritten.
// The mapping of commands to pages is families.go. It also renders
// docs/lock-order.md from internal/lockrank, the other table the docs
// repeat.
package main

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
)

func main() {
	out := flag.String("out", "../docs/commands", "directory of the pages; its notes/ holds the hand-written part")
	lockOrderOut := flag.String("lockorder", "../docs/lock-order.md", "the lock order page")
	flag.Parse()
	if err := os.WriteFile(*lockOrderOut, lockOrder(), 0o644); err != nil {
		logrus.Fatal(err)
	}
	if err := run(*out); err != nil {
		logrus.Fatal(err)
	}
}

func run(out string) error {
	a, err := loadABI()
	if err != nil {
		return err
	}
	if err := a.check(); err != nil {
		return err
	}
	notesDir := filepath.Join(out, "notes")
	if err := checkNotes(notesDir); err != nil {
		return err
	}
	for _, f := range families {
		notes, err := os.ReadFile(filepath.Join(notesDir, f.slug+".md"))
		if err != nil {
			return err // every family has notes: no page of bare tables
		}
		p, err := a.page(f, notes)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, f.slug+".md"), p, 0o644); err != nil {
			return err
		}
	}
	notes, err := os.ReadFile(filepath.Join(notesDir, "README.md"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "README.md"), a.index(notes), 0o644)
}

// checkNotes refuses a notes file no family renders, so a renamed family
// cannot leave its notes behind unseen.
func checkNotes(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		slug := strings.TrimSuffix(e.Name(), ".md")
		if slug == "README" {
			continue
		}
		if !slices.ContainsFunc(families, func(f family) bool { return f.slug == slug }) {
			return &os.PathError{Op: "docgen: no family renders", Path: filepath.Join(dir, e.Name()), Err: os.ErrInvalid}
		}
	}
	return nil
}
