package main

import (
	"flag"
)

// runFlags are run's flags. Its namespace child (__nsrun) takes every one
// of them: one function registers them in both processes, and the
// child's command line is derived from the parent's parsed set
// (relayArgs), so a new flag cannot be left out of the relay.
type runFlags struct {
	host      hostFlags
	user      userFlags
	noChardev bool
	deviceFDs deviceFDsFlag
}

func (r *runFlags) register(fl *flag.FlagSet) {
	r.host.register(fl)
	r.user.register(fl)
	fl.BoolVar(&r.noChardev, "no-chardev", false, "make /dev/neuronN the FUSE files instead of character devices with seccomp-redirected opens")
	r.deviceFDs = defaultDeviceFDs()
	fl.Var(&r.deviceFDs, "device-fds", "what a device descriptor is: fuse (an open of the FUSE file; mmap needs FUSE passthrough), supervisor (the device's memory file, whose ioctls the seccomp supervisor serves; mmap works on any kernel) or auto (fuse where its mmap works, else supervisor); $"+deviceFDsEnv+" sets the default")
}

// relayArgs renders, as --name=value, every flag of fl that register
// registers: the command line a child process that registers them the
// same way parses back to fl's values (every flag.Value here round-trips
// through String and Set). Flags of fl that register does not know stay
// behind.
func relayArgs(fl *flag.FlagSet, register func(*flag.FlagSet)) []string {
	shared := flag.NewFlagSet("", flag.ContinueOnError)
	register(shared)
	var args []string
	fl.VisitAll(func(f *flag.Flag) {
		if shared.Lookup(f.Name) != nil {
			args = append(args, "--"+f.Name+"="+f.Value.String())
		}
	})
	return args
}

// argsOf is the command line that makes a process registering its flags
// with register parse them to v: for the hidden commands' flags, which
// the parent fills in rather than parses.
func argsOf[T any](v T, register func(*T, *flag.FlagSet)) []string {
	fl := flag.NewFlagSet("", flag.ContinueOnError)
	var relay T
	register(&relay, fl) // binds fl to relay, at the defaults
	relay = v
	return relayArgs(fl, func(f *flag.FlagSet) { register(new(T), f) })
}
