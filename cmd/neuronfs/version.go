package main

import (
	"fmt"
	goruntime "runtime"
	"runtime/debug"
	"strings"

	"github.com/neuronfs/neuronfs/ioctl"
)

// version is set at link time by release builds:
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/neuronfs
//
// Otherwise the module version (or VCS revision) of the build is shown.
var version = ""

// buildVersion is the neuronfs version of this binary.
func buildVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return versionOf(bi)
}

// versionOf is the version a build's information gives: the module
// version, then the VCS revision and whether the tree was modified,
// unless the module version says them already (a pseudo-version
// such as v0.0.0-20261205120000-0123456789ab+dirty, which Go stamps on
// builds from a clone).
func versionOf(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 && !strings.Contains(v, s.Value[:12]) {
			v += " " + s.Value[:12]
		}
		if s.Key == "vcs.modified" && s.Value == "true" && !strings.Contains(v, "+dirty") {
			v += "+dirty"
		}
	}
	return v
}

func cmdVersion(args []string) int {
	if len(args) > 0 {
		return usageLine("version", "takes no arguments")
	}
	fmt.Printf("neuronfs %s (%s)\n", buildVersion(), goruntime.Version())
	fmt.Printf("emulated driver: %s (default); also %s\n", ioctl.DefaultVersion, strings.Join(otherVersions(), ", "))
	return exitOK
}

func otherVersions() []string {
	var out []string
	for _, v := range ioctl.Versions() {
		if v != ioctl.DefaultVersion {
			out = append(out, v)
		}
	}
	return out
}
