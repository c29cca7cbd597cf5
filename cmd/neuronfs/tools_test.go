package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/dhal"
)

func init() {
	clients["tools"] = toolsClient
}

// standardTools are the programs TestRunStandardTools runs inside run,
// by the package that installs them.
var standardTools = []struct{ bin, pkg string }{
	{"lspci", "pciutils"},
	{"lstopo-no-graphics", "hwloc-nox"},
}

// lspciSpeed is how lspci names a link speed: "32GT/s" for the kernel's
// "32.0 GT/s PCIe".
func lspciSpeed(l dhal.PCIeLink) string {
	return strings.TrimSuffix(strings.Fields(l.Speed())[0], ".0") + "GT/s"
}

// toolsClient runs the standard tools named in NEURONFS_TOOLS (bin=path
// pairs) and checks that they see each device as a PCI Express endpoint
// with its link, MSI-X disabled, and the EC2 DMI set NFD reads.
func toolsClient() int {
	fail := clientFail
	inst, err := dhal.LookupInstance(os.Getenv("NEURONFS_INSTANCE"))
	if err != nil {
		return fail("%v", err)
	}
	link := inst.Product.PCIeLink()
	tools := map[string]string{}
	for _, kv := range strings.Fields(os.Getenv("NEURONFS_TOOLS")) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			tools[k] = v
		}
	}
	// run prints what a tool wrote on stdout; lspci warns on stderr
	// about missing kernel-module data, which is no failure.
	run := func(bin string, args ...string) (string, error) {
		out, err := exec.Command(bin, args...).Output()
		return string(out), err
	}
	count := func(out, s string) int { return strings.Count(out, s) }
	if lspci := tools["lspci"]; lspci != "" {
		vvv, err := run(lspci, "-vvv", "-d", "1d0f:")
		if err != nil {
			return fail("lspci -vvv: %v", err)
		}
		for _, want := range []string{
			"Capabilities: [40] Power Management version 3",
			fmt.Sprintf("MSI-X: Enable- Count=%d", dhal.MSIXVectors),
			"Express (v2) Endpoint",
			fmt.Sprintf("LnkCap:\tPort #0, Speed %s, Width x%d", lspciSpeed(link), link.Width),
			fmt.Sprintf("LnkSta:\tSpeed %s, Width x%d", lspciSpeed(link), link.Width),
			"Kernel driver in use: neuron-driver",
		} {
			if n := count(vvv, want); n != inst.Devices {
				return fail("lspci -vvv shows %q %d times, want %d:\n%s", want, n, inst.Devices, vvv)
			}
		}
		nn, err := run(lspci, "-nn", "-D", "-d", "1d0f:")
		if err != nil {
			return fail("lspci -nn: %v", err)
		}
		if n := count(nn, fmt.Sprintf("[0880]: Amazon.com, Inc. ")); n != inst.Devices || count(nn, fmt.Sprintf("[1d0f:%04x]", inst.Product.PCIDevice)) != inst.Devices {
			return fail("lspci -nn:\n%s", nn)
		}
		tree, err := run(lspci, "-t")
		if err != nil {
			return fail("lspci -t: %v", err)
		}
		for _, b := range inst.BDFs {
			root := fmt.Sprintf("[%04x:%02x]", b.Domain, b.Bus)
			fn := fmt.Sprintf("-%02x.%x", b.Slot, b.Func)
			_, below, ok := strings.Cut(tree, root)
			if !ok || !strings.Contains(below, fn) {
				return fail("lspci -t has no %s%s:\n%s", root, fn, tree)
			}
		}
	}
	if lstopo := tools["lstopo-no-graphics"]; lstopo != "" {
		topo, err := run(lstopo, "--whole-io", "--no-collapse", "-v", "--of", "console")
		if err != nil {
			return fail("lstopo: %v", err)
		}
		id := fmt.Sprintf("id=1d0f:%04x", inst.Product.PCIDevice)
		n := 0
		for _, line := range strings.Split(topo, "\n") {
			if !strings.Contains(line, id) {
				continue
			}
			n++
			if !strings.Contains(line, "link=") || strings.Contains(line, "link=0.00") {
				return fail("lstopo shows no link speed: %s", line)
			}
		}
		if n != inst.Devices {
			return fail("lstopo shows %d Neuron functions, want %d:\n%s", n, inst.Devices, topo)
		}
	}
	// The DMI files node-feature-discovery's dmi source reads.
	for _, name := range []string{"bios_date", "bios_vendor", "bios_version", "board_asset_tag", "board_name",
		"board_vendor", "board_version", "chassis_asset_tag", "chassis_type", "chassis_vendor", "chassis_version",
		"product_family", "product_name", "product_sku", "product_version", "sys_vendor"} {
		if _, err := os.ReadFile("/sys/class/dmi/id/" + name); err != nil {
			return fail("%v", err)
		}
	}
	fmt.Println("tools ok")
	return 0
}

// Inside run, the standard tools see the devices as PCI Express
// endpoints: lspci (-vvv, -nn, -t) shows the capabilities and the link,
// lstopo a link speed. A missing tool is skipped, unless the suite
// requires everything (NEURONFS_REQUIRE_FUSE=1; CI installs them).
func TestRunStandardTools(t *testing.T) {
	var tools []string
	for _, tool := range standardTools {
		p, err := exec.LookPath(tool.bin)
		if err != nil {
			if os.Getenv("NEURONFS_REQUIRE_FUSE") == "1" {
				t.Fatalf("%s (%s) is needed for this test: %v", tool.bin, tool.pkg, err)
			}
			t.Logf("no %s, not checking it: %v", tool.bin, err)
			continue
		}
		tools = append(tools, tool.bin+"="+p)
	}
	before := hostView(t)
	t.Run("instances", func(t *testing.T) {
		for _, inst := range []string{"trn2.48xlarge", "trn1.2xlarge", "inf2.48xlarge", "trn3.48xlarge"} {
			t.Run(inst, func(t *testing.T) {
				t.Parallel()
				cmd := neuronfs(t, "run", "--instance", inst, "--", os.Args[0], "__client", "tools")
				cmd.Env = append(cmd.Env, "NEURONFS_INSTANCE="+inst, "NEURONFS_TOOLS="+strings.Join(tools, " "))
				if out, err := cmd.Output(); err != nil || string(out) != "tools ok\n" {
					t.Fatalf("%v %q", err, out)
				}
			})
		}
	})
	if after := hostView(t); after != before {
		t.Fatalf("host changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
