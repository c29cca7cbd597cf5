#!/usr/bin/env bash
# The long storm: ROUNDS rounds (default 500) of TestStorm. Each round runs
# PROCS client processes (default 24) on the 16 devices of a trn2.48xlarge
# for SECONDS_PER_PROC each (default 1.5), every one mixing every command
# family (memory, copies, mmap stores into chunks and semaphore windows,
# semaphores, events and exec doorbells, notification queues, DMA queues,
# resets, CRWL, core marks, datastore, pod status, garbage commands and
# pointers), a third of them SIGKILLed at random moments. A round that
# does not end within DEADLINE (default 60s) is a hang: the test logs
# every goroutine stack (and writes them to DUMP if set), aborts the FUSE
# connection and fails. After every round every device must be back at
# its baseline; after the last, the daemon's goroutines and RSS back near
# theirs. Every suite run does 3 rounds (scripts/test.sh); the long
# rounds live here. SEED repeats a run's
# choice of sequences (the test logs it).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-500}
export NEURONFS_REQUIRE_FUSE=1 NEURONFS_STORM_ROUNDS="$rounds"
[ -n "${PROCS:-}" ] && export NEURONFS_STORM_PROCS="$PROCS"
[ -n "${SECONDS_PER_PROC:-}" ] && export NEURONFS_STORM_SECONDS="$SECONDS_PER_PROC"
[ -n "${DEADLINE:-}" ] && export NEURONFS_STORM_DEADLINE="$DEADLINE"
[ -n "${SEED:-}" ] && export NEURONFS_STORM_SEED="$SEED"
[ -n "${DUMP:-}" ] && export NEURONFS_STORM_DUMP="$DUMP"
# About 6 s a round on a busy 2-core machine; a hang ends its round after
# the deadline, so the go test timeout is only a last resort.
go test -race -count=1 -run '^TestStorm$' -v -timeout "$((rounds * 30 + 600))s" ./fs
