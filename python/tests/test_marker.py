"""A module that asks for its own instance: it runs in a session of its own."""

import pytest

pytestmark = pytest.mark.neuron_instance("inf2.xlarge")


def test_runs_on_the_instance_it_asks_for(neuron_host):
    assert neuron_host.state()["instance"] == "inf2.xlarge"
    with open("/sys/class/neuron_device/neuron0/info/architecture/device_name") as f:
        assert f.read() == "Inferentia2\n"
