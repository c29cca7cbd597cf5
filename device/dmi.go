package device

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
)

// dmiField is one file of /sys/devices/virtual/dmi/id: its name, the
// key the kernel puts before it in modalias ("" for none), and whether
// only root may read it.
type dmiField struct {
	name, alias string
	rootOnly    bool
	value       func(s *System) string
}

const ec2Vendor = "Amazon EC2"

func dmiText(v string) func(*System) string { return func(*System) string { return v } }

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
	{"product_name", "pn", false, func(s *System) string { return s.Instance.Name }},
	{"product_version", "pvr", false, dmiText("")},
	{"board_vendor", "rvn", false, dmiText(ec2Vendor)},
	{"board_name", "rn", false, dmiText("")},
	{"board_version", "rvr", false, dmiText("")},
	{"chassis_vendor", "cvn", false, dmiText(ec2Vendor)},
	{"chassis_type", "ct", false, dmiText("1")},
	{"chassis_version", "cvr", false, dmiText("")},
	{"product_sku", "sku", false, dmiText("")},
	{"product_family", "", false, dmiText("")},
	{"product_serial", "", true, (*System).instanceUUID},
	{"product_uuid", "", true, (*System).instanceUUID},
	{"board_serial", "", true, dmiText("")},
	{"board_asset_tag", "", false, (*System).instanceID},
	{"chassis_serial", "", true, dmiText("")},
	{"chassis_asset_tag", "", false, dmiText(ec2Vendor)},
}

// instanceDigest is the hex seed of one of the instance's identifiers
// (what names it): device 0's serial number (--node-serial when given),
// so one host keeps its ids across runs and two emulated hosts differ.
func (s *System) instanceDigest(what string) string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], s.serialNumber(0))
	return fmt.Sprintf("%x", sha256.Sum256(append([]byte("ec2-"+what+":"), b[:]...)))
}

// instanceID is the EC2 instance id, "i-" and 17 hex digits, which Nitro
// puts in board_asset_tag.
func (s *System) instanceID() string {
	return "i-" + s.instanceDigest("instance-id")[:17]
}

// instanceUUID is the instance's SMBIOS UUID, shown as product_uuid and
// product_serial: on EC2 it starts with "ec2".
func (s *System) instanceUUID() string {
	h := "ec2" + s.instanceDigest("uuid")[:29]
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// dmiModalias renders modalias the kernel's way: "dmi:" then each keyed
// field as key, value without blanks, controls and colons, and ":".
func (s *System) dmiModalias() string {
	var sb strings.Builder
	sb.WriteString("dmi:")
	for _, f := range dmiFields {
		if f.alias == "" {
			continue
		}
		sb.WriteString(f.alias)
		for _, r := range f.value(s) {
			if r > ' ' && r < 127 && r != ':' {
				sb.WriteRune(r)
			}
		}
		sb.WriteByte(':')
	}
	return sb.String()
}

// DMIAttributes returns the files of /sys/devices/virtual/dmi/id.
func (s *System) DMIAttributes() []Attr {
	out := make([]Attr, 0, len(dmiFields)+2)
	for _, f := range dmiFields {
		mode := uint32(0o444)
		if f.rootOnly {
			mode = 0o400
		}
		content := f.value(s) + "\n"
		out = append(out, Attr{Path: f.name, Mode: mode, Show: func() string { return content }})
	}
	alias := s.dmiModalias()
	return append(out,
		Attr{Path: "modalias", Mode: 0o444, Show: func() string { return alias + "\n" }},
		Attr{Path: "uevent", Mode: 0o644, Show: func() string { return "MODALIAS=" + alias + "\n" }, Store: ignoreWrite},
	)
}
