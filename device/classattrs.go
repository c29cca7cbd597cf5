package device

import "github.com/neuronfs/neuronfs/ioctl"

// versionedClassAttr is one file of /sys/class/neuron_device that some driver
// versions register: from version since on, up to (not including)
// version until ("" for none yet). pod renders it on an UltraServer or
// PDS host, host elsewhere.
type versionedClassAttr struct {
	name, since, until string
	pod                func(s *System) string
	host               string
}

// classAttrs: 2.20 registers no class attribute; 2.22 adds node_id and
// server_id; 2.23 replaces them with the per-mode set and
// ultraserver_mode. What 2.22's pair prints is not in the sources the
// project has: it is taken to be the later files' format for the
// elected node id and pod serial.
var classAttrs = []versionedClassAttr{
	{"node_id", "2.22.2.0", "2.23.9.0", func(s *System) string { return s.pod.ClassNodeID(0) }, "-1\n"},
	{"server_id", "2.22.2.0", "2.23.9.0", func(s *System) string { return s.pod.ClassServerID(0) }, "0000000000000000\n"},
	{"node_id_2", "2.23.9.0", "", func(s *System) string { return s.pod.ClassNodeID(2) }, "-1\n"},
	{"node_id_4", "2.23.9.0", "", func(s *System) string { return s.pod.ClassNodeID(4) }, "-1\n"},
	{"server_id_2", "2.23.9.0", "", func(s *System) string { return s.pod.ClassServerID(2) }, "0000000000000000\n"},
	{"server_id_4", "2.23.9.0", "", func(s *System) string { return s.pod.ClassServerID(4) }, "0000000000000000\n"},
	{"ultraserver_mode", "2.23.9.0", "", func(s *System) string { return s.pod.ClassModes() }, "\n"},
}

// registered reports whether driver version v has the attribute.
func (a versionedClassAttr) registered(v ioctl.DriverVersion) bool {
	since, err := ioctl.ParseVersion(a.since)
	if err != nil || v.Less(since) {
		return false
	}
	if a.until == "" {
		return true
	}
	until, err := ioctl.ParseVersion(a.until)
	return err == nil && v.Less(until)
}

// ClassAttributes returns /sys/class/neuron_device/'s own files for the
// emulated driver version.
func (fs Sysfs) ClassAttributes() []Attr {
	s := fs.s
	var out []Attr
	for _, a := range classAttrs {
		if !a.registered(s.Table.Version) {
			continue
		}
		show := func() string { return a.host }
		if s.pod != nil {
			show = func() string { return a.pod(s) }
		}
		out = append(out, Attr{Path: a.name, Mode: modeClassAttr, Show: show})
	}
	return out
}
