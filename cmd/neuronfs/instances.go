package main

import (
	"fmt"

	"github.com/neuronfs/neuronfs/dhal"
)

// instanceLine is one line of 'neuronfs instances'.
func instanceLine(in *dhal.Instance) string {
	unit := "devices"
	if in.Devices == 1 {
		unit = "device"
	}
	return fmt.Sprintf("%-20s %-4s %-12s %2d %-7s  %s", in.Name, in.Product.Arch, in.Product.DeviceName, in.Devices, unit, in.Platform)
}

func cmdInstances(args []string) int {
	if len(args) != 0 {
		return usageLine("instances", "takes no arguments")
	}
	// InstanceNames are in family and size order.
	for _, name := range dhal.InstanceNames() {
		in, err := dhal.LookupInstance(name)
		if err != nil {
			continue
		}
		fmt.Println(instanceLine(in))
	}
	return exitOK
}
