#!/usr/bin/env bash
# The whole test suite: vet, formatting, generated code, every test with the
# race detector, and a bounded run of each fuzz target. The real-mount tests
# need root and /dev/fuse; with NEURONFS_REQUIRE_FUSE=1 they fail instead of
# skipping when those are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

go vet ./...
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt would change: $unformatted" >&2
	exit 1
fi

# Generated files must be current: the ABI description (from ioctl/abi),
# the command pages (from it, device's handlers and docs/commands/notes)
# and the lock order page (from internal/lockrank).
# One check for all: regenerate, then compare with what is committed,
# including which pages exist.
generated() { ls ioctl/abi_*_gen.go docs/commands/*.md docs/lock-order.md; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
before=$(generated)
for f in $before; do mkdir -p "$tmp/$(dirname "$f")" && cp "$f" "$tmp/$f"; done
go generate ./ioctl ./device
if [ "$before" != "$(generated)" ]; then
	echo "generated files appeared or vanished: run 'go generate ./ioctl ./device' and commit" >&2
	exit 1
fi
for f in $before; do
	if ! cmp -s "$tmp/$f" "$f"; then
		echo "$f is stale: run 'go generate ./ioctl ./device' and commit" >&2
		exit 1
	fi
done

# Test binaries check the lock order themselves; daemons the tests start
# from a built neuronfs check it too with this.
export NEURONFS_LOCKCHECK=1
# The suite runs in passes, each on one FUSE transport and one memory
# backing (NEURONFS_FUSE_TRANSPORT and NEURONFS_MEMORY_BACKING, read by
# every mount and daemon the tests make): go-fuse's classic loop and FUSE
# over io_uring where the kernel has it; sparse files in a directory of
# the runner's own filesystem (on ext4, through the compact store) and memfds.
# Pass i takes the i-th of each list, cycling the shorter one.
# NEURONFS_FUSE_TRANSPORTS and NEURONFS_MEMORY_BACKINGS override the
# lists; .ci/run asks for both transports, so a CI kernel without io_uring
# fails.
transports=${NEURONFS_FUSE_TRANSPORTS:-}
if [ -z "$transports" ]; then
	transports=classic
	[ -e /sys/module/fuse/parameters/enable_uring ] && transports="classic uring"
fi
backings=${NEURONFS_MEMORY_BACKINGS:-file memfd}
read -ra tlist <<<"$transports"
read -ra blist <<<"$backings"
passes=$(( ${#tlist[@]} > ${#blist[@]} ? ${#tlist[@]} : ${#blist[@]} ))

trap 'rm -rf "$tmp"' EXIT

# The first pass runs every package; later passes only those a transport
# or backing can change: the ones that mount hosts (they import fs or its
# test harness) or read the pass's variables themselves.
transport_pkgs=$(grep -rlE --include='*.go' \
	'"github.com/neuronfs/neuronfs/(fs|fs/testutil)"|NEURONFS_(FUSE_TRANSPORT|MEMORY_BACKING)\b' . |
	xargs -n1 dirname | sort -u | grep -v '^\./fs/testdata')

# Child processes of the tests are -race binaries too; each would sleep a
# second at exit.
export GORACE="${GORACE:-atexit_sleep_ms=0}"
# Each pass gets an explicit budget: go test's default 10 minutes leaves a
# loaded machine no headroom.
timeout=${NEURONFS_TEST_TIMEOUT:-30m}
status=0

for ((i = 0; i < passes; i++)); do
	transport=${tlist[i % ${#tlist[@]}]}
	backing=${blist[i % ${#blist[@]}]}
	case $backing in
	memfd) backing_env=memfd ;;
	file)
		mkdir -p "$tmp/backing"
		backing_env="file:$tmp/backing"
		;;
	*)
		echo "unknown memory backing $backing (want file or memfd)" >&2
		exit 1
		;;
	esac
	pkgs=./...
	[ -n "${ran_all:-}" ] && pkgs=$transport_pkgs
	ran_all=1
	echo "== tests on the $transport FUSE transport, $backing memory backing"
	NEURONFS_FUSE_TRANSPORT=$transport NEURONFS_MEMORY_BACKING=$backing_env \
		go test -race -count=1 -timeout "$timeout" $pkgs || status=1
done

# Fuzz budgets are counts of executions, not durations: with a duration,
# Go 1.26's fuzz coordinator can report its own end-of-time as a failure
# ("context deadline exceeded", no crasher; golang/go#75804, fixed in 1.27)
# when a loaded machine delays a worker. Each count is about what the
# target ran in the duration it had before.
go test ./device -run='^$' -fuzz='^FuzzIoctl$' -fuzztime="${NEURONFS_FUZZTIME:-30000x}"
go test ./chip/dma -run='^$' -fuzz='^FuzzExecute$' -fuzztime=20000x
go test ./trace -run='^$' -fuzz='^FuzzRead$' -fuzztime=400000x
# A trace is untrusted input: replaying any that parses opens nothing but
# the device nodes. The fault grammar is anyone's input under run.
go test ./trace/replay -run='^$' -fuzz='^FuzzReplay$' -fuzztime=100000x
go test ./device -run='^$' -fuzz='^FuzzFaultSpec$' -fuzztime=50000x
# Each input writes and reads a 16 MiB store: tens of inputs a second.
go test ./chip/spacefs -run='^$' -fuzz='^FuzzStore$' -fuzztime=1000x
go test ./chip/mmio -run='^$' -fuzz='^FuzzFirmware$' -fuzztime=130000x
go test ./chip/seq -run='^$' -fuzz='^FuzzDecode$' -fuzztime=100000x
go test ./chip/seq -run='^$' -fuzz='^FuzzRun$' -fuzztime=20000x
go test ./chip/seq -run='^$' -fuzz='^FuzzRows$' -fuzztime=3000x
go test ./hostview -run='^$' -fuzz='^FuzzShadowRoute$' -fuzztime=50000x
go test ./chip -run='^$' -fuzz='^FuzzCSRWrite$' -fuzztime=20000x
go test ./runtime -run='^$' -fuzz='^FuzzParseCores$' -fuzztime=50000x
podfuzz=${NEURONFS_POD_FUZZTIME:-}
go test ./pod -run='^$' -fuzz='^FuzzDecodeRequest$' -fuzztime="${podfuzz:-300000x}"
go test ./pod -run='^$' -fuzz='^FuzzDecodeResponse$' -fuzztime="${podfuzz:-300000x}"
go test ./pod -run='^$' -fuzz='^FuzzDecodeNetMsg$' -fuzztime="${podfuzz:-300000x}"
go test ./pod -run='^$' -fuzz='^FuzzSessionRead$' -fuzztime="${podfuzz:-120000x}"
exit $status
