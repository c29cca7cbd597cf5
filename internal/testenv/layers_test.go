package testenv

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/neuronfs/neuronfs/"

// The internal packages are the bottom layer: their code (tests included)
// imports nothing of the module outside internal/, so no arrow in the
// import graph runs from them upward.
func TestInternalImportsNothingAbove(t *testing.T) {
	root := filepath.Join("..")
	fset := token.NewFileSet()
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		n++
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, module) && !strings.HasPrefix(p, module+"internal/") {
				t.Errorf("%s imports %s, above internal/", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no Go files under internal/")
	}
}
