package device

import (
	"encoding/binary"
	"regexp"
	"slices"
	"testing"

	"github.com/neuronfs/neuronfs/dhal"
)

func systemFor(t *testing.T, cfg Config) *System {
	t.Helper()
	s, err := NewSystem(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func attrMap(attrs []Attr) map[string]Attr {
	m := map[string]Attr{}
	for _, a := range attrs {
		m[a.Path] = a
	}
	return m
}

// Config-space offsets and capability ids of the PCI 3.0 and PCI Express
// base specifications, as lspci reads them.
const (
	pciStatus        = 0x06
	pciStatusCapList = 0x0010
	pciCapPointer    = 0x34
	pciCapIDPM       = 0x01
	pciCapIDPCIe     = 0x10
	pciCapIDMSIX     = 0x11
)

// TestPCICapabilityList walks each architecture's capability list the
// way lspci does and checks what it finds against the product's link.
func TestPCICapabilityList(t *testing.T) {
	for _, inst := range []string{"trn1.2xlarge", "inf2.xlarge", "trn2.3xlarge", "trn3pd98.3xlarge"} {
		t.Run(inst, func(t *testing.T) {
			t.Parallel()
			s := systemFor(t, Config{Instance: inst})
			d := s.Devices[0]
			attrs := attrMap(d.PCIAttributes())
			cfg := attrs["config"]
			c := []byte(cfg.Show())
			if len(c) != 4096 || cfg.Size != 4096 || cfg.UnprivilegedLen != 64 {
				t.Fatalf("config: %d bytes, size %d, unprivileged %d", len(c), cfg.Size, cfg.UnprivilegedLen)
			}
			le := binary.LittleEndian
			if le.Uint16(c[pciStatus:])&pciStatusCapList == 0 {
				t.Fatal("status has no capability list")
			}
			found := map[uint8]int{}
			var ids []uint8
			for off := int(c[pciCapPointer]); off != 0; off = int(c[off+1]) {
				if off < 0x40 || off > 0xfc || off%4 != 0 || len(ids) > 48 {
					t.Fatalf("capability pointer %#x after %v", off, ids)
				}
				ids = append(ids, c[off])
				found[c[off]] = off
			}
			if want := []uint8{pciCapIDPM, pciCapIDMSIX, pciCapIDPCIe}; !slices.Equal(ids, want) {
				t.Errorf("capabilities %v, want %v", ids, want)
			}
			if le.Uint32(c[0x100:]) != 0 {
				t.Errorf("extended capability header %#x, want none", le.Uint32(c[0x100:]))
			}
			msix := found[pciCapIDMSIX]
			if ctl := le.Uint16(c[msix+2:]); ctl&0x8000 != 0 || int(ctl&0x7ff)+1 != dhal.MSIXVectors {
				t.Errorf("MSI-X control %#x: want disabled with %d vectors", ctl, dhal.MSIXVectors)
			}
			link := s.Instance.Product.PCIeLink()
			pcie := found[pciCapIDPCIe]
			if typ := c[pcie+2] & 0xf0; typ != 0 {
				t.Errorf("PCIe device type %#x, want endpoint", typ)
			}
			lnkCap, lnkSta := le.Uint32(c[pcie+0x0c:]), le.Uint16(c[pcie+0x12:])
			if int(lnkCap&0xf) != link.Gen || int(lnkCap>>4&0x3f) != link.Width || int(lnkSta&0xf) != link.Gen || int(lnkSta>>4&0x3f) != link.Width {
				t.Errorf("LnkCap %#x LnkSta %#x, want %v", lnkCap, lnkSta, link)
			}
			for name, want := range map[string]string{
				"current_link_speed": link.Speed() + "\n", "max_link_speed": link.Speed() + "\n",
				"current_link_width": "16\n", "max_link_width": "16\n", "irq": "0\n",
			} {
				if a, ok := attrs[name]; !ok || a.Show() != want || a.Mode != 0o444 {
					t.Errorf("%s: mode %#o (present %v), want %q", name, a.Mode, ok, want)
				}
			}
			for p := range attrs {
				if p == "msi_irqs" || len(p) > 9 && p[:9] == "msi_irqs/" {
					t.Errorf("%s present, but the driver enables no MSI", p)
				}
			}
		})
	}
}

// TestDMIIdentity checks the EC2 set: modes as the kernel gives them,
// ids derived from device 0's serial and stable for it.
func TestDMIIdentity(t *testing.T) {
	a := attrMap(systemFor(t, Config{Instance: "trn1.2xlarge", NodeSerial: 0x1234}).Sysfs().DMIAttributes())
	b := attrMap(systemFor(t, Config{Instance: "trn1.2xlarge", NodeSerial: 0x1234}).Sysfs().DMIAttributes())
	c := attrMap(systemFor(t, Config{Instance: "trn1.2xlarge", NodeSerial: 0x5678}).Sysfs().DMIAttributes())
	rootOnly := []string{"product_serial", "product_uuid", "board_serial", "chassis_serial"}
	want := map[string]string{
		"sys_vendor": "Amazon EC2\n", "bios_vendor": "Amazon EC2\n", "chassis_asset_tag": "Amazon EC2\n",
		"product_name": "trn1.2xlarge\n", "board_name": "\n", "board_version": "\n", "chassis_version": "\n",
		"product_family": "\n", "product_sku": "\n", "board_serial": "\n", "chassis_serial": "\n",
	}
	for name, v := range want {
		if got := a[name]; got.Show == nil || got.Show() != v {
			t.Errorf("%s missing or not %q", name, v)
		}
	}
	for name, attr := range a {
		wantMode := uint32(0o444)
		if slices.Contains(rootOnly, name) {
			wantMode = 0o400
		}
		if name == "uevent" {
			wantMode = 0o644
		}
		if attr.Mode != wantMode {
			t.Errorf("%s mode %#o, want %#o", name, attr.Mode, wantMode)
		}
	}
	uuid := a["product_uuid"].Show()
	if !regexp.MustCompile(`^ec2[0-9a-f]{5}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\n$`).MatchString(uuid) || a["product_serial"].Show() != uuid {
		t.Errorf("product_uuid %q, product_serial %q", uuid, a["product_serial"].Show())
	}
	id := a["board_asset_tag"].Show()
	if !regexp.MustCompile(`^i-[0-9a-f]{17}\n$`).MatchString(id) {
		t.Errorf("board_asset_tag %q", id)
	}
	if b["product_uuid"].Show() != uuid || b["board_asset_tag"].Show() != id {
		t.Error("ids differ for the same node serial")
	}
	if c["product_uuid"].Show() == uuid || c["board_asset_tag"].Show() == id {
		t.Error("ids equal for different node serials")
	}
	if m := a["modalias"].Show(); m != "dmi:bvnAmazonEC2:bvr1.0:bd10/16/2017:br1.0:svnAmazonEC2:pntrn1.2xlarge:pvr:rvnAmazonEC2:rn:rvr:cvnAmazonEC2:ct1:cvr:sku:\n" {
		t.Errorf("modalias %q", m)
	}
}

// TestClassAttributesByVersion: the class directory's files follow the
// driver version.
func TestClassAttributesByVersion(t *testing.T) {
	modes := []string{"node_id_2", "node_id_4", "server_id_2", "server_id_4", "ultraserver_mode"}
	for version, want := range map[string][]string{
		"2.20.28.0": nil,
		"2.22.2.0":  {"node_id", "server_id"},
		"2.23.9.0":  modes,
		"2.25.4.0":  modes,
		"2.29.0.0":  modes,
	} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			s := systemFor(t, Config{Instance: "trn1.2xlarge", DriverVersion: version})
			var got []string
			for _, a := range s.Sysfs().ClassAttributes() {
				got = append(got, a.Path)
				if a.Mode != 0o444 {
					t.Errorf("%s mode %#o", a.Path, a.Mode)
				}
				if v := a.Show(); v != "-1\n" && v != "0000000000000000\n" && v != "\n" {
					t.Errorf("%s = %q on a standard host", a.Path, v)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("class attributes %v, want %v", got, want)
			}
		})
	}
}
