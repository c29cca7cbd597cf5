package testbed

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/device"
)

// State and DeviceState are aliases, which go doc shows without fields:
// their comments list the fields instead, and must name every one.
func TestStateDocNamesFields(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "control.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE && g.Doc != nil {
			docs[g.Specs[0].(*ast.TypeSpec).Name.Name] = g.Doc.Text()
		}
	}
	for name, typ := range map[string]reflect.Type{"State": reflect.TypeFor[device.HostState](), "DeviceState": reflect.TypeFor[device.DeviceState]()} {
		listed := map[string]bool{}
		for _, line := range strings.Split(docs[name], "\n") {
			if f := strings.Fields(line); strings.HasPrefix(line, "\t") && len(f) > 1 {
				listed[f[0]] = true
			}
		}
		var want []string
		for i := range typ.NumField() {
			want = append(want, typ.Field(i).Name)
			if !listed[typ.Field(i).Name] {
				t.Errorf("the comment of %s does not list the field %s", name, typ.Field(i).Name)
			}
		}
		if len(listed) != len(want) {
			t.Errorf("the comment of %s lists %d fields, %s has %v", name, len(listed), typ, want)
		}
	}
}
