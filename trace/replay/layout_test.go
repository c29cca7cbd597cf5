package replay

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/trace/abi"
)

// refStruct is a struct as the reference tables give it.
type refStruct struct {
	size    int
	members map[string][2]int // top-level member -> offset, size
}

var tagRe = regexp.MustCompile(`^(?:struct|union) (\w+)`)

// readRef reads the struct table of one version directory (or the base).
func readRef(t *testing.T, path string) map[string]refStruct {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]refStruct{}
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		r := strings.Split(sc.Text(), "\t")
		if len(r) < 5 {
			continue
		}
		tag := tagRe.FindStringSubmatch(r[0])[1]
		s, ok := out[tag]
		if !ok {
			s = refStruct{members: map[string][2]int{}}
		}
		off, _ := strconv.Atoi(r[2])
		size, _ := strconv.Atoi(strings.Fields(r[3] + " x")[0])
		switch {
		case r[1] == "(whole struct)":
			s.size = size
		case r[1] == "(padding)", strings.Contains(r[1], "."), strings.HasPrefix(r[2], "bit "):
		default:
			s.members[r[1]] = [2]int{off, size}
		}
		out[tag] = s
	}
	return out
}

// versionChain lists a version and its ancestors' directories, newest
// first, as the generator resolves a struct.
func versionChain(t *testing.T, v string) []string {
	dir := "../../ioctl/abi"
	var chain []string
	for v != "" {
		p := filepath.Join(dir, "versions", v)
		b, err := os.ReadFile(filepath.Join(p, "parent"))
		if err != nil {
			chain = append(chain, dir) // the base
			break
		}
		chain = append(chain, p)
		v = strings.TrimSpace(string(b))
	}
	return chain
}

// For every emulated driver version and every command, the layout the
// dispatcher decodes (the Go mirror), the layout the trace decoder prints
// and the layout replay rewrites (both abi.ForCommand) are the same, byte
// for byte, and they match the reference tables of that version.
func TestLayoutsAgreeAcrossConsumers(t *testing.T) {
	checked := 0
	for _, v := range ioctl.Versions() {
		tab, err := ioctl.ForVersion(v)
		if err != nil {
			t.Fatal(err)
		}
		chain := versionChain(t, v)
		refs := make([]map[string]refStruct, len(chain))
		for i, d := range chain {
			refs[i] = readRef(t, filepath.Join(d, "abi-structs.tsv"))
		}
		for _, c := range tab.Commands() {
			_, st, ok := abi.ForCommand(tab, c.Cmd)
			if !ok {
				t.Fatalf("%s %s: unknown to the decoder", v, c.Name)
			}
			if c.ArgType == nil || c.ArgType.Kind() != reflect.Struct {
				continue
			}
			if st.Size != c.ArgSize || st.Size != int(c.ArgType.Size()) || st.Type != c.ArgType {
				t.Errorf("%s %s: decoder %d bytes (%v), dispatch %d bytes (%v), table %d", v, c.Name, st.Size, st.Type, c.ArgType.Size(), c.ArgType, c.ArgSize)
				continue
			}
			var ref refStruct
			found := false
			for _, m := range refs {
				if r, ok := m[st.Name]; ok {
					ref, found = r, true
					break
				}
			}
			if !found || ref.size != st.Size {
				t.Errorf("%s %s: struct %s not in the reference (or size %d != %d)", v, c.Name, st.Name, ref.size, st.Size)
				continue
			}
			goAt := map[uintptr]uintptr{}
			for i := 0; i < c.ArgType.NumField(); i++ {
				if f := c.ArgType.Field(i); f.Name != "_" {
					goAt[f.Offset] = f.Type.Size()
				}
			}
			for _, f := range st.Fields {
				want, ok := ref.members[f.Name]
				if f.Size == 0 {
					continue // a flexible array member
				}
				if !ok || want != [2]int{f.Offset, f.Size} {
					t.Errorf("%s %s: member %s at %d+%d, reference %v", v, c.Name, f.Name, f.Offset, f.Size, want)
				}
				if size, ok := goAt[uintptr(f.Offset)]; ok && size != uintptr(f.Size) {
					t.Errorf("%s %s: member %s is %d bytes in Go, %d in C", v, c.Name, f.Name, size, f.Size)
				} else if !ok && !overlapped(st, f) {
					t.Errorf("%s %s: member %s at %d has no Go field", v, c.Name, f.Name, f.Offset)
				}
			}
			checked++
		}
	}
	if checked < 400 {
		t.Fatalf("only %d (version, command) layouts checked", checked)
	}
}

// overlapped says whether another member starts at f's offset first (a
// union), which the Go mirror keeps instead.
func overlapped(st abi.Struct, f abi.Field) bool {
	for _, g := range st.Fields {
		if g.Name == f.Name {
			return false
		}
		if g.Offset == f.Offset {
			return true
		}
	}
	return false
}
