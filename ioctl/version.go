package ioctl

import (
	"fmt"
	"strconv"
	"strings"
)

// DriverVersion is a driver release, a.b.c.d.
type DriverVersion [4]uint32

// ParseVersion parses a dotted version of up to four numbers.
func ParseVersion(s string) (DriverVersion, error) {
	var v DriverVersion
	parts := strings.Split(s, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return v, fmt.Errorf("ioctl: bad driver version %q", s)
	}
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return v, fmt.Errorf("ioctl: bad driver version %q", s)
		}
		v[i] = uint32(n)
	}
	return v, nil
}

// mustVersion is ParseVersion for the versions this package defines.
func mustVersion(s string) DriverVersion {
	v, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

func (v DriverVersion) String() string {
	return fmt.Sprintf("%d.%d.%d.%d", v[0], v[1], v[2], v[3])
}

// Less orders versions.
func (v DriverVersion) Less(w DriverVersion) bool {
	for i := range v {
		if v[i] != w[i] {
			return v[i] < w[i]
		}
	}
	return false
}
