package chardev

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// xsysConsts reads the integer constants NAME = VALUE of x/sys/unix's
// generated file (zsysnum_linux_GOARCH.go, zerrors_linux_GOARCH.go) from
// the module cache: another architecture's values are not importable
// into this build.
func xsysConsts(t *testing.T, file string) map[string]uint64 {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		// A test binary run away from the source tree (an arm64 guest).
		t.Skip("no go command: the test reads x/sys/unix's sources from the module cache")
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/sys").Output()
	if err != nil {
		t.Fatalf("go list golang.org/x/sys (the test reads its generated tables): %v", err)
	}
	f, err := os.Open(filepath.Join(strings.TrimSpace(string(out)), "unix", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	re := regexp.MustCompile(`^\s+([A-Z][A-Z0-9_]*)\s+=\s+(0x[0-9a-f]+|[0-9]+)$`)
	consts := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			v, err := strconv.ParseUint(m[2], 0, 64)
			if err != nil {
				t.Fatalf("%s: %s: %v", file, m[1], err)
			}
			consts[m[1]] = v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(consts) == 0 {
		t.Fatalf("%s: no constants read", file)
	}
	return consts
}

// Each architecture's table has the numbers of x/sys/unix's SYS_
// constants for that architecture, and no number for a call the
// architecture lacks; its audit architecture and O_DIRECTORY are
// x/sys/unix's too.
func TestSysArchTables(t *testing.T) {
	audits := map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}
	if len(sysArches) != len(audits) {
		t.Fatalf("%d architectures, %d expected", len(sysArches), len(audits))
	}
	for goarch, a := range sysArches {
		if a.goarch != goarch || a.audit != audits[goarch] {
			t.Errorf("%s: table of %s, audit %#x, want %#x", goarch, a.goarch, a.audit, audits[goarch])
		}
		nums := xsysConsts(t, "zsysnum_linux_"+goarch+".go")
		errs := xsysConsts(t, "zerrors_linux_"+goarch+".go")
		if uint64(a.oDirectory) != errs["O_DIRECTORY"] {
			t.Errorf("%s: O_DIRECTORY %#x, x/sys/unix %#x", goarch, a.oDirectory, errs["O_DIRECTORY"])
		}
		for c := sysCall(0); c < numSysCalls; c++ {
			name := sysNames[c]
			if name == "" {
				t.Fatalf("call %d has no name", c)
			}
			want, has := nums["SYS_"+strings.ToUpper(name)]
			got, ok := a.nr(c)
			if ok != has || ok && uint64(got) != want {
				t.Errorf("%s %s: table %d (%v), x/sys/unix %d (%v)", goarch, name, got, ok, want, has)
			}
			if ok && a.call(int32(got)) != c {
				t.Errorf("%s %s: number %d maps back to %d", goarch, name, got, a.call(int32(got)))
			}
		}
		if len(a.nrs) != len(a.byNr) {
			t.Errorf("%s: %d calls, %d distinct numbers", goarch, len(a.nrs), len(a.byNr))
		}
	}
}

// Every path call an architecture has is sent by its view filter
// whatever its arguments; those it lacks are the legacy forms arm64's
// generic table never had.
func TestPathCallsEachArch(t *testing.T) {
	lacks := map[string]string{"amd64": "", "arm64": "access lstat open readlink stat"}
	for goarch, a := range sysArches {
		prog := buildFilter(filterMode{arch: a, direct: true, paths: true, ioctlType: neuronType})
		var missing []string
		for _, c := range pathCalls {
			nr, ok := a.nr(c.call)
			if !ok {
				missing = append(missing, sysNames[c.call])
				continue
			}
			if got := run(t, prog, a.audit, nr, make([]uint64, 6)...); got != unix.SECCOMP_RET_USER_NOTIF {
				t.Errorf("%s %s with zero arguments: %#x, want notify", goarch, sysNames[c.call], got)
			}
		}
		slices.Sort(missing)
		if got := strings.Join(missing, " "); got != lacks[goarch] {
			t.Errorf("%s lacks %q, want %q", goarch, got, lacks[goarch])
		}
	}
}

// The running build's filters take its own architecture's table.
func TestHostArch(t *testing.T) {
	a := sysArches[runtime.GOARCH]
	if a == nil || hostArch != a {
		t.Fatalf("hostArch %v for %s", hostArch, runtime.GOARCH)
	}
	if nr, ok := hostArch.nr(sysOpenat); !ok || nr != unix.SYS_OPENAT {
		t.Errorf("openat %d (%v), this build's unix.SYS_OPENAT %d", nr, ok, unix.SYS_OPENAT)
	}
}
