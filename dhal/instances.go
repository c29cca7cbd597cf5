package dhal

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
)

// Instance is an EC2 instance type profile. LookupInstance and WithDevices
// return private copies; modifying one affects nothing else.
type Instance struct {
	Name     string // DMI product_name, e.g. "trn2.48xlarge"
	Product  *Product
	Devices  int      // device count
	Platform Platform // decided from Name exactly as the driver decides it
	BDFs     []BDF    // PCI address of each device, by device index
	// ServerID is what firmware reports in misc-RAM 0x70 on PDS platforms;
	// it offsets routing ids (RIDMap, RoutingID). Ignored elsewhere.
	ServerID uint32
}

// Arch returns the architecture of the instance's devices.
func (in *Instance) Arch() Arch { return in.Product.Arch }

// products lists every chip model the driver binds.
var products = []*Product{&productTrn1, &productInf2, &productTrn2, &productTrn3}

// LookupProduct returns a copy of the product with the given name ("Trn1", ...).
func LookupProduct(name string) (*Product, error) {
	for _, p := range products {
		if p.Name == name {
			c := *p
			return &c, nil
		}
	}
	return nil, fmt.Errorf("dhal: unknown product %q", name)
}

// ProductForPCI returns a copy of the product the driver binds for the
// given PCI id; for the second Trn3 id the copy carries that id.
func ProductForPCI(vendor, device uint16) (*Product, error) {
	for _, p := range products {
		if vendor != p.PCIVendor {
			continue
		}
		if device == p.PCIDevice || (p == &productTrn3 && containsID(trn3PCIDevices, device)) {
			c := *p
			c.PCIDevice = device
			return &c, nil
		}
	}
	return nil, fmt.Errorf("dhal: no product for PCI id %04x:%04x", vendor, device)
}

func containsID(ids []uint16, id uint16) bool {
	for _, v := range ids {
		if v == id {
			return true
		}
	}
	return false
}

// platformRule: a DMI product name selects a platform when it starts with
// prefix (the driver compares strncmp over the length of its constant).
type platformRule struct {
	prefix   string
	platform Platform
}

// platformRules per arch. V2 never sets a platform (stays standard).
var platformRules = map[Arch][]platformRule{
	V3: v3PlatformNames,
	V4: v4PlatformNames,
}

// PlatformFor returns the platform the driver derives from the DMI
// product name on architecture a (module parameter force_userver unset).
func PlatformFor(a Arch, productName string) Platform {
	return PlatformWithForce(a, productName, false)
}

// PlatformWithForce is PlatformFor with the force_userver module parameter.
// It only has an effect on V3: V4 re-runs its own detection afterwards.
func PlatformWithForce(a Arch, productName string, forceUserver bool) Platform {
	p := PlatformStandard
	for _, r := range platformRules[a] {
		if strings.HasPrefix(productName, r.prefix) {
			p = r.platform
			break
		}
	}
	if forceUserver && a == V3 {
		p = PlatformUltraServer
	}
	return p
}

// bdf is shorthand for a domain-0, function-0 address.
func bdf(bus uint32, slot uint8) BDF { return BDF{Bus: bus, Slot: slot} }

// Bus numbers come from public neuron-ls outputs where we found them:
//   - trn1.2xlarge 00:1e.0 and the 16 trn1.32xlarge addresses: Neuron SDK
//     runtime docs and user transcripts (neuron-ls --topology).
//   - inf2.8xlarge 00:1f.0, inf2.24xlarge and inf2.48xlarge: user
//     transcripts of neuron-ls. inf2.xlarge is assumed equal to inf2.8xlarge.
//   - the 16 Trn2 addresses: neuron-ls guide example (trn2n.48xlarge).
//
// Not found, chosen by us: trn2.3xlarge and trn3pd98.3xlarge reuse the
// single-device slot 00:1e.0; Trn3 16-device boxes reuse the Trn2 layout.
var (
	bdfsTrn1Single = []BDF{bdf(0x00, 0x1e)}
	bdfsTrn1Box    = []BDF{
		bdf(0x10, 0x1c), bdf(0x10, 0x1d), bdf(0xa0, 0x1c), bdf(0xa0, 0x1d),
		bdf(0x20, 0x1b), bdf(0x20, 0x1c), bdf(0x90, 0x1b), bdf(0x90, 0x1c),
		bdf(0x20, 0x1d), bdf(0x20, 0x1e), bdf(0x90, 0x1d), bdf(0x90, 0x1e),
		bdf(0x10, 0x1e), bdf(0x10, 0x1b), bdf(0xa0, 0x1e), bdf(0xa0, 0x1b),
	}
	bdfsInf2Single = []BDF{bdf(0x00, 0x1f)}
	bdfsInf2Six    = []BDF{
		bdf(0x20, 0x1e), bdf(0x20, 0x1f), bdf(0x10, 0x1e),
		bdf(0x10, 0x1f), bdf(0x10, 0x1d), bdf(0x20, 0x1d),
	}
	bdfsInf2Twelve = []BDF{
		bdf(0x80, 0x1e), bdf(0x90, 0x1e), bdf(0x80, 0x1d), bdf(0x90, 0x1f),
		bdf(0x80, 0x1f), bdf(0x90, 0x1d), bdf(0x20, 0x1e), bdf(0x20, 0x1f),
		bdf(0x10, 0x1e), bdf(0x10, 0x1f), bdf(0x10, 0x1d), bdf(0x20, 0x1d),
	}
	bdfsTorusSingle = []BDF{bdf(0x00, 0x1e)}
	bdfsTorusBox    = []BDF{
		bdf(0xcc, 0), bdf(0xb5, 0), bdf(0xb6, 0), bdf(0xcb, 0),
		bdf(0x6f, 0), bdf(0x58, 0), bdf(0x59, 0), bdf(0x6e, 0),
		bdf(0x9b, 0), bdf(0x84, 0), bdf(0x85, 0), bdf(0x9a, 0),
		bdf(0xf8, 0), bdf(0xe1, 0), bdf(0xe2, 0), bdf(0xf7, 0),
	}
)

// instanceProfile: the device count is len(bdfs).
type instanceProfile struct {
	product *Product
	bdfs    []BDF
}

// instanceProfiles by DMI product name.
//
// Trn3 names: driver 2.25.4.0 itself names only trn3s.48xlarge and
// trn3-dev0.48xlarge (PDS) and trn3pd98.3xlarge (routing id forced to 0).
// "trn3.48xlarge" is the 16-device Trn3 name used in public benchmark
// write-ups and in later drivers' platform tables; 2.25.4.0 does not list
// it, so it is a standard platform here (later drivers call it PDS).
var instanceProfiles = map[string]instanceProfile{
	"trn1.2xlarge":     {&productTrn1, bdfsTrn1Single},
	"trn1.32xlarge":    {&productTrn1, bdfsTrn1Box},
	"trn1n.32xlarge":   {&productTrn1, bdfsTrn1Box},
	"inf2.xlarge":      {&productInf2, bdfsInf2Single},
	"inf2.8xlarge":     {&productInf2, bdfsInf2Single},
	"inf2.24xlarge":    {&productInf2, bdfsInf2Six},
	"inf2.48xlarge":    {&productInf2, bdfsInf2Twelve},
	"trn2.3xlarge":     {&productTrn2, bdfsTorusSingle}, // 1 device (SageMaker/EC2 trn2.3xlarge)
	"trn2.48xlarge":    {&productTrn2, bdfsTorusBox},
	"trn2u.48xlarge":   {&productTrn2, bdfsTorusBox},
	"trn3.48xlarge":    {&productTrn3, bdfsTorusBox},
	"trn3s.48xlarge":   {&productTrn3, bdfsTorusBox},
	"trn3pd98.3xlarge": {&productTrn3, bdfsTorusSingle},
}

// InstanceNames returns the known instance type names in family and size
// order, as AWS lists them: inf2.xlarge, inf2.8xlarge, inf2.24xlarge, ...
func InstanceNames() []string {
	names := make([]string, 0, len(instanceProfiles))
	for n := range instanceProfiles {
		names = append(names, n)
	}
	slices.SortFunc(names, CompareInstanceNames)
	return names
}

// CompareInstanceNames orders instance types by family (the part before
// the dot), then size (xlarge, 2xlarge, ... 48xlarge).
func CompareInstanceNames(a, b string) int {
	fa, sa, _ := strings.Cut(a, ".")
	fb, sb, _ := strings.Cut(b, ".")
	if c := cmp.Compare(fa, fb); c != 0 {
		return c
	}
	if c := cmp.Compare(sizeRank(sa), sizeRank(sb)); c != 0 {
		return c
	}
	return cmp.Compare(sa, sb)
}

// sizeRank is the multiple of xlarge a size names (xlarge 1, 24xlarge 24;
// medium and large below it).
func sizeRank(size string) int {
	switch size {
	case "medium":
		return -2
	case "large":
		return -1
	}
	n, ok := strings.CutSuffix(size, "xlarge")
	if !ok {
		return 1 << 20
	}
	if n == "" {
		return 1
	}
	v, err := strconv.Atoi(n)
	if err != nil {
		return 1 << 20
	}
	return v
}

// LookupInstance returns a private copy of the named profile.
func LookupInstance(name string) (*Instance, error) {
	prof, ok := instanceProfiles[name]
	if !ok {
		return nil, fmt.Errorf("dhal: unknown instance type %q (known: %s)",
			name, strings.Join(InstanceNames(), ", "))
	}
	p := *prof.product
	return &Instance{
		Name:     name,
		Product:  &p,
		Devices:  len(prof.bdfs),
		Platform: PlatformFor(p.Arch, name),
		BDFs:     append([]BDF(nil), prof.bdfs...),
	}, nil
}

// MaxDevicesFor is the largest device count the driver can number without
// duplicate indices: V2 renumbers per group of 16 up to 64 devices, while
// V3/V4 renumber routing ids modulo 16, so a 17th device would collide
// (the driver then fails the probe).
func MaxDevicesFor(a Arch) int {
	if a == V2 {
		return MaxDevices
	}
	return 16
}

// WithDevices returns a copy of the profile with n devices. The first
// devices keep the profile's addresses; extra ones get unused buses
// (slot 0) chosen deterministically.
func (in *Instance) WithDevices(n int) (*Instance, error) {
	if max := MaxDevicesFor(in.Arch()); n < 1 || n > max {
		return nil, fmt.Errorf("dhal: %s: device count %d out of range 1..%d", in.Name, n, max)
	}
	out := *in
	p := *in.Product
	out.Product = &p
	out.Devices = n
	out.BDFs = make([]BDF, 0, n)
	used := make(map[BDF]bool)
	for i := 0; i < n && i < len(in.BDFs); i++ {
		out.BDFs = append(out.BDFs, in.BDFs[i])
		used[in.BDFs[i]] = true
	}
	for bus := uint32(0x11); len(out.BDFs) < n; bus++ {
		if b := bdf(bus, 0); !used[b] {
			out.BDFs = append(out.BDFs, b)
			used[b] = true
		}
	}
	return &out, nil
}

// SerialNumber returns a deterministic, plausible 64-bit serial number for
// device index of this instance (sysfs info/serial_number, misc-RAM
// 0x38/0x3c). It depends only on the instance name, server id and index.
func (in *Instance) SerialNumber(index int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "neuronfs/%s/%d/%d", in.Name, in.ServerID, index)
	s := h.Sum64()
	if s == 0 || s == ^uint64(0) { // avoid values that read as "no data"
		s ^= 0x5a5a5a5a5a5a5a5a
	}
	return s
}
