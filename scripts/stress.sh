#!/usr/bin/env bash
# The long stress run: PROCS client processes (default 32) across the 16
# devices of a trn1.32xlarge for SECONDS each (default 60), random valid
# and invalid sequences (memory, copies, mmap, DMA, notification queues,
# core locks and marks, datastore, resets, register traffic), a third of
# them SIGKILLed at random moments. Afterwards every device must be back
# at its baseline, and the daemon's goroutines and RSS back near theirs.
# CI runs the same test for 2 seconds per process (scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
procs=${PROCS:-32}
secs=${SECONDS_PER_PROC:-60}
NEURONFS_REQUIRE_FUSE=1 NEURONFS_STRESS_PROCS="$procs" NEURONFS_STRESS_SECONDS="$secs" \
	go test -race -count=1 -run '^TestStress$' -v -timeout "$((secs * 3 + 300))s" ./fs
