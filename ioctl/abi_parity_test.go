package ioctl

import (
	"bufio"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/ioctl/internal/abinames"
)

// The reference tables in testdata were produced by compiling the driver
// headers (docs/driver-facts.md); the Go layouts here are computed by the
// Go compiler. Any disagreement fails.

func readTSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			rows = append(rows, strings.Split(sc.Text(), "\t"))
		}
	}
	return rows
}

var tagRe = regexp.MustCompile(`^(?:struct|union) (\w+)`)

// fieldAt resolves a possibly dotted member path to its offset and size.
func fieldAt(typ reflect.Type, path string) (off, size uintptr, ok bool) {
	for _, part := range strings.Split(path, ".") {
		f, found := typ.FieldByName(abinames.GoName(part))
		if !found {
			return 0, 0, false
		}
		off += f.Offset
		size = f.Type.Size()
		typ = f.Type
	}
	return off, size, true
}

func TestStructLayoutsMatchDriver(t *testing.T) {
	rows := readTSV(t, "abi/abi-structs.tsv")
	seen := map[string]bool{}
	for _, r := range rows {
		tag := tagRe.FindStringSubmatch(r[0])[1]
		typ, ok := TypeOfC(tag)
		if !ok {
			t.Errorf("%s: no Go type", tag)
			continue
		}
		seen[tag] = true
		switch {
		case r[1] == "(whole struct)":
			size, _ := strconv.Atoi(r[3])
			align, _ := strconv.Atoi(strings.TrimPrefix(r[4], "alignof "))
			if int(typ.Size()) != size {
				t.Errorf("%s: Go size %d, driver %d", tag, typ.Size(), size)
			}
			if typ.Align() != align {
				t.Errorf("%s: Go align %d, driver %d", tag, typ.Align(), align)
			}
		case strings.HasPrefix(r[2], "bit "):
			// Bit-fields live inside the union's word; its size is checked above.
		case strings.HasPrefix(r[3], "0 (flexible"):
			off, _ := strconv.Atoi(r[2])
			if int(typ.Size()) != off {
				t.Errorf("%s.%s: flexible array at %d but Go header is %d bytes", tag, r[1], off, typ.Size())
			}
		default:
			wantOff, _ := strconv.Atoi(r[2])
			wantSize, _ := strconv.Atoi(r[3])
			off, size, ok := fieldAt(typ, r[1])
			if !ok {
				t.Errorf("%s.%s: no Go field", tag, r[1])
				continue
			}
			if int(off) != wantOff || int(size) != wantSize {
				t.Errorf("%s.%s: Go offset %d size %d, driver offset %d size %d", tag, r[1], off, size, wantOff, wantSize)
			}
		}
	}
	if len(seen) != len(cTypes) {
		t.Errorf("reference has %d structs, Go has %d", len(seen), len(cTypes))
	}
}

func TestCommandTableMatchesDriver(t *testing.T) {
	rows := readTSV(t, "abi/abi-ioctls.tsv")
	tab := Default()
	if len(rows) != 99 || len(tab.Commands()) != len(rows) {
		t.Fatalf("reference rows %d, table commands %d; want 99 each", len(rows), len(tab.Commands()))
	}
	dirs := map[string]uint32{"none": DirNone, "R": DirRead, "W": DirWrite, "RW": DirRead | DirWrite}
	for _, r := range rows {
		val, err := strconv.ParseUint(r[4], 0, 32)
		if err != nil {
			t.Fatal(err)
		}
		nr, _ := strconv.Atoi(r[1])
		encSize, _ := strconv.Atoi(r[3])
		// The value must follow from (dir, 'N', nr, size) by the kernel's rule.
		if got := IOC(dirs[r[2]], Magic, uint32(nr), uint32(encSize)); got != uint32(val) {
			t.Errorf("%s: IOC(%s,N,%d,%d)=%#x, reference value %#x", r[0], r[2], nr, encSize, got, val)
		}
		c, ok := tab.Lookup(uint32(val))
		if !ok {
			t.Errorf("%s %#x: not in table", r[0], val)
			continue
		}
		if c.Name != r[0] || c.Nr() != uint32(nr) || c.EncodedSize() != uint32(encSize) || c.Dir != dirs[r[2]] {
			t.Errorf("%s: table has %s nr %d size %d dir %d", r[0], c.Name, c.Nr(), c.EncodedSize(), c.Dir)
		}
		wantSize := -1
		if n, err := strconv.Atoi(r[6]); err == nil {
			wantSize = n
		}
		if c.ArgSize != wantSize {
			t.Errorf("%s: ArgSize %d, reference %s", r[0], c.ArgSize, r[6])
		}
		if c.ArgType != nil && int(c.ArgType.Size()) != wantSize {
			t.Errorf("%s: Go argument type %v is %d bytes, reference %d", r[0], c.ArgType, c.ArgType.Size(), wantSize)
		}
		if (c.ArgType == nil) != (wantSize <= 0) {
			t.Errorf("%s: ArgType %v for reference size %s", r[0], c.ArgType, r[6])
		}
		wantLane := LaneMain
		if strings.HasPrefix(r[7], "misc") {
			wantLane = LaneMisc
		}
		if c.ExactInFamily != (c.MatchByNr && strings.Contains(r[11], "exact cmd")) {
			t.Errorf("%s: ExactInFamily %v, reference rule %q", r[0], c.ExactInFamily, r[11])
		}
		if c.MatchByNr != strings.HasPrefix(r[11], "_IOC_NR") {
			t.Errorf("%s: MatchByNr %v, reference rule %q", r[0], c.MatchByNr, r[11])
		}
		if c.Lane != wantLane || c.AttachGated != (r[8] == "yes") {
			t.Errorf("%s: lane %v gated %v, reference %q %q", r[0], c.Lane, c.AttachGated, r[7], r[8])
		}
	}
}

func TestIOCRoundTrip(t *testing.T) {
	cmd := IOC(DirRead|DirWrite, Magic, 121, 260)
	if cmd != CmdPodInfo || Dir(cmd) != 3 || Type(cmd) != 'N' || Nr(cmd) != 121 || Size(cmd) != 260 {
		t.Fatalf("IOC decode of %#x wrong", cmd)
	}
}

func TestClampErrno(t *testing.T) {
	for in, want := range map[int]int{0: 0, 22: 22, 38: 25, 511: 511, 515: 25, 524: 95, 600: 5} {
		if got := ClampErrno(syscallErrno(in)); int(got) != want {
			t.Errorf("ClampErrno(%d)=%d want %d", in, got, want)
		}
	}
}
