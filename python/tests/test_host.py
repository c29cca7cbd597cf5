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
    # The driver takes a reset only while nobody has the device open. The
    # last test's close returned before a FUSE mount's release reached the
    # daemon (FUSE sends RELEASE asynchronously), so wait for it.
    neuron_host.wait_for(lambda s: s["devices"][0]["opens"] == 0)
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


def _mem_allocs(n):
    """Issue n legacy MEM_ALLOCs of 4 KiB on /dev/neuron0; each call's errno name or "ok"."""
    import ctypes
    import fcntl
    import struct
    mem_alloc = 0x80084E15  # NEURON_IOCTL_MEM_ALLOC
    handle = ctypes.c_uint64()
    out = []
    fd = os.open("/dev/neuron0", os.O_RDWR)
    try:
        for _ in range(n):
            arg = bytearray(struct.pack("<QIIIIQ", 4096, 0, 0, 0, 0, ctypes.addressof(handle)))
            try:
                fcntl.ioctl(fd, mem_alloc, arg, True)
                out.append("ok")
            except OSError as e:
                out.append(errno.errorcode[e.errno])
    finally:
        os.close(fd)
    return out


def test_fail_call(neuron_host):
    neuron_host.fail_call("MEM_ALLOC", errno.ENOMEM, nth=3)
    assert neuron_host.faults() == ["fail:MEM_ALLOC:ENOMEM:3"]
    assert _mem_allocs(5) == ["ok", "ok", "ENOMEM", "ok", "ok"]
    neuron_host.fail_call("MEM_ALLOC", "EIO", nth=2, repeat=True)
    assert _mem_allocs(3) == ["ok", "EIO", "EIO"]
    with pytest.raises(ValueError, match="N from 1"):
        neuron_host.fail_call("MEM_ALLOC", "ENOMEM", nth=0)


def test_fail_calls_randomly(neuron_host):
    runs = []
    for _ in range(2):
        neuron_host.fail_calls_randomly("MEM_ALLOC", errno.ENOMEM, 50, seed=1234)
        runs.append(_mem_allocs(24))
    assert runs[0] == runs[1]  # setting the fault again starts its count again
    assert "ok" in runs[0] and "ENOMEM" in runs[0]
