"""The plugin's own suite: run with --neuron-instance trn2.3xlarge."""

import errno
import os

import pytest


def test_devices_are_character_devices(neuron_host):
    assert neuron_host.devices == ["/dev/neuron0"]
    import stat
    assert stat.S_ISCHR(os.stat("/dev/neuron0").st_mode)
    with open("/sys/class/dmi/id/product_name") as f:
        assert f.read() == "trn2.3xlarge\n"


def test_state_follows_an_open(neuron_host):
    st = neuron_host.state()
    assert st["version"] == 1 and st["instance"] == "trn2.3xlarge"
    fd = os.open("/dev/neuron0", os.O_RDWR)
    try:
        assert neuron_host.state()["devices"][0]["pids"] == [os.getpid()]
    finally:
        os.close(fd)
    assert neuron_host.state()["devices"][0]["pids"] == []


def test_reset_failure(neuron_host):
    neuron_host.inject("reset-fail")
    assert neuron_host.faults() == ["reset-fail"]
    with open("/sys/class/neuron_device/neuron0/reset", "w") as f:
        f.write("1\n")
    st = neuron_host.wait_for(lambda s: s["devices"][0]["state"] == "invalid")
    dev = st["devices"][0]
    assert dev["resets"]["last"] == "failed"
    assert dev["cores"][0]["counters"]["reset_fail_count"] == 1
    # The driver's answer to the program: an invalid device refuses opens.
    with pytest.raises(OSError) as e:
        os.open("/dev/neuron0", os.O_RDWR)
    assert e.value.errno == errno.EINVAL


def test_bad_fault_list(neuron_host):
    with pytest.raises(ValueError, match="unknown fault"):
        neuron_host.inject("reset-fail,bogus")
    assert neuron_host.faults() == []
    # Recover: without the fault the next reset succeeds.
    neuron_host.clear_faults()
    with open("/sys/class/neuron_device/neuron0/reset", "w") as f:
        f.write("1\n")
    neuron_host.wait_for(lambda s: s["devices"][0]["resets"]["last"] == "ok" and s["devices"][0]["state"] == "ready")
