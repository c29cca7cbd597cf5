package lockrank

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The documented order and the locks of the tree agree: every rank in the
// table is the rank of some lock outside tests, every lock's rank is in
// the table, and every row says who owns it and what it guards.
func TestOrderDocumentedAndUsed(t *testing.T) {
	documented := map[string]bool{}
	for _, i := range Order() {
		if i.Name == "" || i.Owner == "" || i.Guards == "" {
			t.Errorf("rank %d has no row in the table: %+v", i.Rank, i)
		}
		documented[i.Name] = true
	}
	used := ranksTaken(t, filepath.Join("..", ".."))
	for name, where := range used {
		if !documented[name] {
			t.Errorf("%s takes a lock of rank %s, which the table does not document", where, name)
		}
	}
	for name := range documented {
		if _, ok := used[name]; !ok {
			t.Errorf("rank %s is documented but no lock outside tests has it", name)
		}
	}
}

// ranksTaken maps each rank named as the type argument of a
// lockrank.Mutex or RWMutex in the module's non-test code to one place
// that names it.
func ranksTaken(t *testing.T, root string) map[string]string {
	t.Helper()
	used := map[string]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(src, []byte(`"github.com/neuronfs/neuronfs/internal/lockrank"`)) {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ix, ok := n.(*ast.IndexExpr)
			if !ok || !isLockrank(ix.X, "Mutex", "RWMutex") {
				return true
			}
			if sel, ok := ix.Index.(*ast.SelectorExpr); ok && isLockrank(sel) {
				if _, seen := used[sel.Sel.Name]; !seen {
					used[sel.Sel.Name] = fset.Position(sel.Pos()).String()
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(used) == 0 {
		t.Fatal("no ranked lock found in the tree: is the walk rooted at the module?")
	}
	return used
}

// isLockrank reports whether e is lockrank.<one of names> (any name when
// none are given).
func isLockrank(e ast.Expr, names ...string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "lockrank" && (len(names) == 0 || slices.Contains(names, sel.Sel.Name))
}
