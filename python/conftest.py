"""Loads the plugin for a session started here: `pytest --neuron-instance
trn2.3xlarge` from python/ needs neither -p nor an installed package."""

import os
from importlib import metadata


def _installed():
    """Whether pytest loads the plugin by itself (pip install ./python):
    registering it twice is an error."""
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    try:
        eps = metadata.entry_points(group="pytest11")
    except TypeError:  # Python 3.9: a dict of groups
        eps = metadata.entry_points().get("pytest11", [])
    return any(ep.value == "pytest_neuronfs" for ep in eps)


pytest_plugins = [] if _installed() else ["pytest_neuronfs"]
