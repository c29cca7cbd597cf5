"""A client of neuronfs's control interface (docs/control.md), standard library only."""

import errno
import glob
import json
import os
import time

CONTROL_ENV = "NEURONFS_CONTROL"
VERSION = 1  # the control interface version this client reads


def _errno_name(err):
    """An errno's name for a fault list: "ENOMEM" for errno.ENOMEM."""
    if isinstance(err, int):
        return errno.errorcode.get(err, "ENOTSUPP" if err == 524 else str(err))
    return err


class NeuronHost:
    """The emulated Neuron host this process runs in (under `neuronfs run`)."""

    def __init__(self, control=None):
        self.control = control or os.environ.get(CONTROL_ENV)
        if not self.control:
            raise RuntimeError(f"${CONTROL_ENV} is not set: not inside a neuronfs host")
        with open(os.path.join(self.control, "version")) as f:
            self.version = int(f.read().strip())
        if self.version != VERSION:
            raise RuntimeError(f"control interface version {self.version}; this client reads {VERSION}")

    @property
    def devices(self):
        """The device nodes, /dev/neuron0 first."""
        return sorted(glob.glob("/dev/neuron[0-9]*"), key=lambda p: int(p[len("/dev/neuron"):]))

    def state(self):
        """The state document: a dict, as docs/control.md describes it."""
        with open(os.path.join(self.control, "state")) as f:
            return json.load(f)

    def faults(self):
        """The faults that are on, as a list (empty for none)."""
        with open(os.path.join(self.control, "faults")) as f:
            line = f.readline().strip()
        return [] if line == "none" else line.split(",")

    def inject(self, faults):
        """Switch faults on or off, in the syntax of `neuronfs --inject`.

        A list with a mistake changes nothing and raises ValueError with the reason.
        """
        path = os.path.join(self.control, "faults")
        # One write, unbuffered: a rejected list fails that write alone.
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, (faults + "\n").encode())
        except OSError as e:
            with open(path) as f:
                lines = f.read().splitlines()
            why = lines[1].lstrip("# ") if len(lines) > 1 else str(e)
            raise ValueError(f"faults {faults!r}: {why}") from e
        finally:
            os.close(fd)

    def clear_faults(self):
        self.inject("none")

    def fail_call(self, command, err, nth=1, repeat=False):
        """Fail the nth call (from 1) of the ioctl `command` with `err`.

        `command` is the driver's name, with or without NEURON_IOCTL_
        ("MEM_ALLOC"); `err` an errno name ("ENOMEM") or number
        (errno.ENOMEM). Calls are counted on the whole host from now; the
        calls before and after the nth pass, unless repeat fails every
        call from the nth on.
        """
        self.inject(f"fail:{command}:{_errno_name(err)}:{int(nth)}{'+' if repeat else ''}")

    def fail_calls_randomly(self, command, err, percent, seed):
        """Fail each call of `command` with the chance `percent` (0.01 to
        100); the same seed fails the same calls, on any host."""
        self.inject(f"fail:{command}:{_errno_name(err)}:{percent:g}%:{int(seed)}")

    def wait_for(self, predicate, timeout=10.0, interval=0.001):
        """Poll the state until predicate(state) holds; return that state.

        Raises TimeoutError with the last state after timeout seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            st = self.state()
            if predicate(st):
                return st
            if time.monotonic() > deadline:
                raise TimeoutError(f"condition not met in {timeout}s; last state: {st}")
            time.sleep(interval)
