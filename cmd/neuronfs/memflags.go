package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/neuronfs/neuronfs/device"
)

// backingFlag is --memory-backing: memfd or file:DIR.
type backingFlag struct {
	b      device.Backing
	envErr error // the environment's default is bad, and no flag replaced it
}

func (f *backingFlag) String() string { return f.b.String() }
func (f *backingFlag) Set(v string) error {
	b, err := device.ParseBacking(v)
	if err != nil {
		return err
	}
	f.b, f.envErr = b, nil
	return nil
}

// limitFlag is --memory-limit: a size, or none. Its zero value is the
// default (device.Config.MemoryLimit 0); none is -1.
type limitFlag struct{ n int64 }

func (f *limitFlag) String() string {
	switch {
	case f.n < 0:
		return "none"
	case f.n == 0:
		return "default"
	}
	return strconv.FormatInt(f.n, 10)
}

func (f *limitFlag) Set(v string) error {
	switch v {
	case "none":
		f.n = -1
		return nil
	case "default":
		f.n = 0
		return nil
	}
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("a limit of 0 bytes: say none for no limit")
	}
	f.n = n
	return nil
}

// parseSize reads a byte count with an optional binary suffix: 512M,
// 2G, 2GiB, 1T.
func parseSize(v string) (int64, error) {
	s := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(v)), "IB"), "B")
	shift := 0
	if k := len(s); k > 0 {
		if i := strings.IndexByte("KMGT", s[k-1]); i >= 0 {
			shift, s = 10*(i+1), s[:k-1]
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)>>shift {
		return 0, fmt.Errorf("size %q: want bytes, or a number with K, M, G or T", v)
	}
	return n << shift, nil
}
