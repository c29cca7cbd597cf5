"""A pytest suite of a project outside neuronfs, as scripts/ci-example.sh
runs it: the session runs inside `neuronfs run`, so the program under test
sees the devices and the driver's sysfs, and `neuron_host` injects faults."""

import os
import stat


def test_sees_the_devices():
    st = os.stat("/dev/neuron0")
    assert stat.S_ISCHR(st.st_mode)
    with open("/sys/class/neuron_device/neuron0/info/architecture/device_name") as f:
        assert f.read().strip() == "Trainium2"


def test_reset_failure(neuron_host):
    neuron_host.inject("reset-fail")
    with open("/sys/class/neuron_device/neuron0/reset", "w") as f:
        f.write("1\n")
    st = neuron_host.wait_for(lambda s: s["devices"][0]["resets"]["last"] == "failed")
    assert st["devices"][0]["state"] == "invalid"
