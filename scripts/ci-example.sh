#!/bin/sh
# What a CI job runs to test code against neuronfs, from a clone of this
# repository (the Go module is not published: build it from the clone).
# It builds neuronfs, runs a Go module's testbed tests, then a pytest
# suite inside `neuronfs run` with the plugin from python/.
#
#   sudo scripts/ci-example.sh                  # examples/gotest and examples/pytest
#   sudo NEURONFS_CI_GO=DIR NEURONFS_CI_PYTEST=DIR scripts/ci-example.sh   # your own
#
# NEURONFS_CI_GO is a Go module whose go.mod has
# 'replace github.com/neuronfs/neuronfs => PATH-OF-THIS-CLONE'; an empty
# value skips that step, and likewise NEURONFS_CI_PYTEST.
# NEURONFS_CI_INSTANCE is the pytest session's instance (trn2.48xlarge).
# Needs root, /dev/fuse, Go 1.26 on PATH, and python3 with pytest
# (Debian: python3-pytest); it installs nothing and writes nothing in the
# clone.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
godir=${NEURONFS_CI_GO-$repo/examples/gotest}
pydir=${NEURONFS_CI_PYTEST-$repo/examples/pytest}
instance=${NEURONFS_CI_INSTANCE:-trn2.48xlarge}

fail() {
	echo "ci-example: $*" >&2
	exit 1
}
[ "$(id -u)" = 0 ] || fail "needs root (FUSE mounts); run it with sudo -E env PATH=\"\$PATH\""
[ -r /dev/fuse ] && [ -w /dev/fuse ] || fail "needs /dev/fuse (modprobe fuse; in a container: --device /dev/fuse)"
command -v go >/dev/null || fail "needs go on PATH (Go 1.26)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=$work/neuronfs
echo "== build neuronfs from $repo"
(cd "$repo" && go build -o "$bin" ./cmd/neuronfs)
"$bin" version

if [ -n "$godir" ]; then
	echo "== go test in $godir (testbed)"
	# GOWORK=off: the module builds as in its own checkout, not in a
	# workspace that happens to be around.
	(cd "$godir" && GOWORK=off NEURONFS_REQUIRE_FUSE=1 go test -count=1 ./...)
fi

if [ -n "$pydir" ]; then
	# A python3 that has pytest: the first on PATH, else the system's (a
	# pyenv or venv python on PATH may lack it).
	py=""
	for p in python3 /usr/bin/python3; do
		if command -v "$p" >/dev/null && "$p" -c 'import pytest' 2>/dev/null; then
			py=$(command -v "$p")
			break
		fi
	done
	[ -n "$py" ] || fail "needs python3 with pytest (Debian: apt-get install python3-pytest)"
	echo "== pytest in $pydir inside neuronfs run --instance $instance"
	# The plugin from the clone, by PYTHONPATH and -p: nothing to install
	# (pip install ./python works too, but builds into python/).
	(cd "$pydir" && PYTHONPATH="$repo/python" PYTHONDONTWRITEBYTECODE=1 NEURONFS_BIN="$bin" \
		"$py" -m pytest -p pytest_neuronfs -p no:cacheprovider --neuron-instance "$instance" .)
fi
echo "ci-example: ok"
