#!/usr/bin/env python3
"""Checks /dev/neuronN inside `neuronfs run` the way device-counting code
does, with the standard library only. Usage: chardev_check.py N INSTANCE"""
import fcntl
import os
import stat
import struct
import sys

DEVICE_BASIC_INFO = 0x40084E64


def major_from_proc():
    in_char = False
    with open("/proc/devices") as f:
        for line in f:
            if line.startswith("Character devices:"):
                in_char = True
                continue
            if not line.strip():
                in_char = False
            parts = line.split()
            if in_char and len(parts) == 2 and parts[1] == "neuron":
                return int(parts[0])
    sys.exit("no neuron line in /proc/devices")


def main():
    want, instance = int(sys.argv[1]), sys.argv[2]
    major = major_from_proc()
    st = os.stat("/dev/neuron3")
    assert stat.S_ISCHR(st.st_mode), "not a character device"
    assert os.major(st.st_rdev) == major and os.minor(st.st_rdev) == 3, st
    fd = os.open("/dev/neuron3", os.O_RDWR)
    buf = bytearray(8)
    fcntl.ioctl(fd, DEVICE_BASIC_INFO, buf)
    arch, _rev = struct.unpack("<II", buf)
    assert arch in (2, 3, 4), arch
    fst = os.fstat(fd)
    assert (fst.st_dev, fst.st_ino, fst.st_mode, fst.st_rdev) == (st.st_dev, st.st_ino, st.st_mode, st.st_rdev), (fst, st)
    os.close(fd)
    found = 0
    for root, _dirs, files in os.walk("/dev"):
        for name in files:
            try:
                s = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if stat.S_ISCHR(s.st_mode) and os.major(s.st_rdev) == major:
                found += 1
    assert found == want, (found, want)
    assert os.path.realpath("/sys/dev/char/%d:3" % major) == "/sys/devices/virtual/neuron_device/neuron3"
    with open("/sys/devices/virtual/dmi/id/product_name") as f:
        assert f.read().strip() == instance
    print("python ok")


main()
