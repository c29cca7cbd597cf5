package device

import (
	"sort"
	"strings"
)

// dmiFields are the dmi/id attributes programs read, as an EC2 Nitro
// instance shows them; product_name is the instance type.
var dmiFields = map[string]string{
	"sys_vendor":        "Amazon EC2",
	"board_vendor":      "Amazon EC2",
	"bios_vendor":       "Amazon EC2",
	"chassis_vendor":    "Amazon EC2",
	"bios_version":      "1.0",
	"bios_date":         "10/16/2017",
	"chassis_type":      "1",
	"chassis_asset_tag": "Amazon EC2",
	"product_version":   "",
	"product_uuid":      "ec2a7f3c-5e0b-4c1d-9a3e-2f6b8d1c0e47",
	"product_serial":    "ec2a7f3c-5e0b-4c1d-9a3e-2f6b8d1c0e47",
}

// DMIAttributes returns the files of /sys/devices/virtual/dmi/id. The
// kernel makes the identifiers (uuid, serial) readable by root only.
func (s *System) DMIAttributes() []Attr {
	fields := map[string]string{"product_name": s.Instance.Name}
	for k, v := range dmiFields {
		fields[k] = v
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]Attr, 0, len(names))
	for _, name := range names {
		mode := uint32(0o444)
		if strings.HasSuffix(name, "_uuid") || strings.HasSuffix(name, "_serial") {
			mode = 0o400
		}
		content := fields[name] + "\n"
		out = append(out, Attr{Path: name, Mode: mode, Show: func() string { return content }})
	}
	return out
}
