"""pytest plugin: run a test session inside an emulated AWS Neuron host.

    pytest -p pytest_neuronfs --neuron-instance trn2.48xlarge tests/

(from this directory, python/, plain `pytest --neuron-instance NAME` loads
the plugin through conftest.py).

re-runs the session under `neuronfs run --instance trn2.48xlarge`, where
/dev/neuronN, the driver's sysfs and the control interface are in place.
The `neuron_host` fixture is a NeuronHost: inject faults, read state.
A module may ask for another instance with
`pytestmark = pytest.mark.neuron_instance("inf2.xlarge")`: its tests run in
one more session, one per instance asked for.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from .control import CONTROL_ENV, NeuronHost

__all__ = ["NeuronHost"]

# Set in the sessions the plugin starts: the instance unmarked tests ask
# for (--neuron-instance), the instance of this session's host, whose
# tests it runs, and where the first session lists the other instances
# that marked modules ask for.
_INSTANCE_ENV = "NEURONFS_PYTEST_INSTANCE"
_ONLY_ENV = "NEURONFS_PYTEST_ONLY"
_REPORT_ENV = "NEURONFS_PYTEST_REPORT"


def pytest_addoption(parser):
    group = parser.getgroup("neuronfs")
    group.addoption("--neuron-instance", default=None, metavar="NAME",
                    help="run the session inside an emulated host of this EC2 instance type (neuronfs run)")
    group.addoption("--neuronfs", default=os.environ.get("NEURONFS_BIN", "neuronfs"), metavar="PATH",
                    help="the neuronfs binary (default: $NEURONFS_BIN, else neuronfs on PATH)")
    group.addoption("--neuronfs-arg", action="append", default=[], metavar="ARG",
                    help="one more flag for neuronfs run, e.g. --neuronfs-arg=--inject=ecc-hbm=1")


def pytest_configure(config):
    config.addinivalue_line("markers", "neuron_instance(name): run this test inside an emulated host of that instance type")


def _run_inside(config, default, instance, report):
    """Run the session in a host of instance, keeping the tests that ask
    for it (unmarked tests ask for the default)."""
    neuronfs = config.getoption("--neuronfs")
    if shutil.which(neuronfs) is None:
        raise pytest.UsageError(f"--neuron-instance: no neuronfs binary {neuronfs!r} (set --neuronfs or $NEURONFS_BIN)")
    env = dict(os.environ)
    env[_INSTANCE_ENV] = default
    env[_ONLY_ENV] = instance
    if report:
        env[_REPORT_ENV] = report
    # The session keeps its user: run would otherwise drop to the user
    # sudo was called by, who cannot write the faults file.
    argv = [neuronfs, "run", "--instance", instance, f"--uid={os.geteuid()}", f"--gid={os.getegid()}",
            *config.getoption("--neuronfs-arg"), "--",
            sys.executable, "-m", "pytest", *config.invocation_params.args]
    return subprocess.call(argv, env=env, cwd=str(config.invocation_params.dir))


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    instance = config.getoption("--neuron-instance")
    if not instance or os.environ.get(CONTROL_ENV):
        return None  # no host asked for, or already inside one
    with tempfile.TemporaryDirectory(prefix="neuronfs-pytest-") as tmp:
        report = os.path.join(tmp, "instances")
        status = _run_inside(config, instance, instance, report)
        others = []
        if os.path.exists(report):
            with open(report) as f:
                others = json.load(f)
    for other in others:
        s = _run_inside(config, instance, other, None)
        if status in (0, 5):  # 5: nothing collected in that session
            status = s if s != 5 else status
    return status


def _instance_of(item, default):
    m = item.get_closest_marker("neuron_instance")
    return m.args[0] if m and m.args else default


def pytest_collection_modifyitems(session, config, items):
    default = os.environ.get(_INSTANCE_ENV)
    only = os.environ.get(_ONLY_ENV)
    if not default or not only:
        return
    keep, drop, others = [], [], set()
    for item in items:
        inst = _instance_of(item, default)
        (keep if inst == only else drop).append(item)
        if inst != default:
            others.add(inst)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    report = os.environ.get(_REPORT_ENV)
    if report:
        with open(report, "w") as f:
            json.dump(sorted(others), f)


# Set to 1, it makes a test that asks for a host skip where the session
# has none, instead of erroring (the testbed package reads it too).
SKIP_ENV = "NEURONFS_SKIP_WITHOUT_HOST"

_NO_HOST = "no neuronfs host in this session: run pytest with --neuron-instance NAME"


@pytest.fixture
def neuron_host(request):
    """The emulated host the session runs in; faults are cleared after the test.

    Without a host the test errors (a suite that silently skips its device
    tests passes for nothing), or skips when $NEURONFS_SKIP_WITHOUT_HOST=1."""
    if not os.environ.get(CONTROL_ENV):
        if os.environ.get(SKIP_ENV) == "1":
            pytest.skip(f"{_NO_HOST} (skipped: ${SKIP_ENV}=1)")
        pytest.fail(f"{_NO_HOST} (or set ${SKIP_ENV}=1 to skip)", pytrace=False)
    host = NeuronHost()
    want = _instance_of(request.node, None)
    if want and host.state()["instance"] != want:
        pytest.skip(f"needs a {want} host; this one is {host.state()['instance']}")
    yield host
    host.clear_faults()
