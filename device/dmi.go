package device

import "strings"

// dmiField is one file of /sys/devices/virtual/dmi/id: its name, the
// key the kernel puts before it in modalias ("" for none), and whether
// only root may read it.
type dmiField struct {
	name, alias string
	rootOnly    bool
	value       func(id identity) string
}

const ec2Vendor = "Amazon EC2"

func dmiText(v string) func(identity) string { return func(identity) string { return v } }

// dmiFields: the set an EC2 Nitro instance shows, in the kernel's order
// of modalias keys for those that have one. Nitro leaves the board's
// name and version, the chassis version and serial, the product family,
// version and SKU empty: the files exist and hold an empty line. The
// kernel makes the serials and the UUID root-only (0400).
var dmiFields = []dmiField{
	{"bios_vendor", "bvn", false, dmiText(ec2Vendor)},
	{"bios_version", "bvr", false, dmiText("1.0")},
	{"bios_date", "bd", false, dmiText("10/16/2017")},
	{"bios_release", "br", false, dmiText("1.0")},
	{"sys_vendor", "svn", false, dmiText(ec2Vendor)},
	{"product_name", "pn", false, func(id identity) string { return id.inst.Name }},
	{"product_version", "pvr", false, dmiText("")},
	{"board_vendor", "rvn", false, dmiText(ec2Vendor)},
	{"board_name", "rn", false, dmiText("")},
	{"board_version", "rvr", false, dmiText("")},
	{"chassis_vendor", "cvn", false, dmiText(ec2Vendor)},
	{"chassis_type", "ct", false, dmiText("1")},
	{"chassis_version", "cvr", false, dmiText("")},
	{"product_sku", "sku", false, dmiText("")},
	{"product_family", "", false, dmiText("")},
	{"product_serial", "", true, identity.uuid},
	{"product_uuid", "", true, identity.uuid},
	{"board_serial", "", true, dmiText("")},
	{"board_asset_tag", "", false, identity.instanceID},
	{"chassis_serial", "", true, dmiText("")},
	{"chassis_asset_tag", "", false, dmiText(ec2Vendor)},
}

// dmiModalias renders modalias the kernel's way: "dmi:" then each keyed
// field as key, value without blanks, controls and colons, and ":".
func dmiModalias(id identity) string {
	var sb strings.Builder
	sb.WriteString("dmi:")
	for _, f := range dmiFields {
		if f.alias == "" {
			continue
		}
		sb.WriteString(f.alias)
		for _, r := range f.value(id) {
			if r > ' ' && r < 127 && r != ':' {
				sb.WriteRune(r)
			}
		}
		sb.WriteByte(':')
	}
	return sb.String()
}

// DMIAttributes returns the files of /sys/devices/virtual/dmi/id.
func (fs Sysfs) DMIAttributes() []Attr {
	s := fs.s
	out := make([]Attr, 0, len(dmiFields)+2)
	for _, f := range dmiFields {
		mode := uint32(0o444)
		if f.rootOnly {
			mode = 0o400
		}
		content := f.value(s.id) + "\n"
		out = append(out, Attr{Path: f.name, Mode: mode, Show: func() string { return content }})
	}
	alias := dmiModalias(s.id)
	return append(out,
		Attr{Path: "modalias", Mode: 0o444, Show: func() string { return alias + "\n" }},
		Attr{Path: "uevent", Mode: 0o644, Show: func() string { return "MODALIAS=" + alias + "\n" }, Store: ignoreWrite},
	)
}
