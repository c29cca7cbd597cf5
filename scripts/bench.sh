#!/usr/bin/env bash
# Benchmarks next to their floors, in one run, summarised by benchstat.
#   scripts/bench.sh            print the table
#   scripts/bench.sh --save     also write bench/results-<date>.txt
# Needs root and /dev/fuse. COUNT (default 8) sets the repetitions. The
# benchmarks not labelled with a transport run on the default (auto: io_uring
# where the kernel offers it); NEURONFS_FUSE_TRANSPORT=classic picks the other.
# The table ends with every path measured on both transports, io_uring /
# classic, marking where the default is worse (scripts/transport-ratios.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
count=${COUNT:-8}
benchstat=$(go env GOPATH)/bin/benchstat
[ -x "$benchstat" ] || go install golang.org/x/perf/cmd/benchstat@latest
raw=$(mktemp)
tmp=$(mktemp -d)
trap 'rm -rf "$raw" "$tmp"' EXIT
go test ./fs -run '^$' -bench '^BenchmarkIoctl$' -benchtime 20000x -count "$count" | tee -a "$raw"
go test ./fs -run '^$' -bench '^BenchmarkRoundTrip$' -benchtime 20000x -count "$count" | tee -a "$raw"
go test ./fs -run '^$' -bench '^(BenchmarkCopy|BenchmarkMappedMemcpy)$' -count "$count" | tee -a "$raw"
go test ./fs -run '^$' -bench '^BenchmarkDMABandwidth$' -count "$count" | tee -a "$raw"
# One NeuronCore's Q7 microcode install over BAR_WRITE, one address per
# word as the runtime writes it, next to process_vm_readv of its arrays.
go test ./fs -run '^$' -bench '^BenchmarkBARWriteUcode$' -count "$count" | tee -a "$raw"
# The whole register-level bring-up of a trn2.48xlarge, once per count:
# wall time, the daemon's RSS and heap, the device memory made resident.
go test ./fs -run '^$' -bench '^BenchmarkBringupWholeHost$' -benchtime 1x -count 3 | tee -a "$raw"
# Collectives: a 64 MiB-per-device ring all-reduce over 16 devices, and a
# client's store into a mapped semaphore window until it takes effect.
go test ./fs -run '^$' -bench '^BenchmarkRingAllReduce$' -benchtime 3x -count "$count" | tee -a "$raw"
go test ./fs -run '^$' -bench '^BenchmarkMappedSemaphoreStore$' -benchtime 500x -count "$count" | tee -a "$raw"
# The FUSE transports against each other and the bare go-fuse floor, from
# a C client process, interleaved within each run (BenchmarkTransports).
go test ./fs -run '^$' -bench '^BenchmarkTransports$' -benchtime 1x -count "$count" | tee -a "$raw"
# Doorbells, and an open and close (requests io_uring hands to a worker),
# on each transport, the transports alternating run by run so both see the
# same minutes; the name gets /transport=T.
for ((i = 0; i < count; i++)); do
	for transport in classic uring; do
		label() { sed -E "s/^(Benchmark[^ ]*)-([0-9]+)/\1\/transport=$transport-\2/"; }
		NEURONFS_FUSE_TRANSPORT=$transport go test ./fs -run '^$' -bench '^(BenchmarkDoorbell|BenchmarkExecDoorbell)$' -benchtime 20000x -count 1 | label | tee -a "$raw"
		NEURONFS_FUSE_TRANSPORT=$transport go test ./fs -run '^$' -bench '^BenchmarkExecConcurrent$' -count 1 | label | tee -a "$raw"
		NEURONFS_FUSE_TRANSPORT=$transport go test ./fs -run '^$' -bench '^BenchmarkOpenClose$' -benchtime 5000x -count 1 | label | tee -a "$raw"
	done
done
# The compute records next to their floors (gonum's Sgemm, a Go loop over
# the same bytes), one count at a time so both see the same minute.
for _ in $(seq "$count"); do
	go test ./chip/seq -run '^$' -bench '^(BenchmarkMatmul|BenchmarkElementwise)$' -count 1 | tee -a "$raw"
done
# DEVICE_BASIC_INFO idle, then while all engines of a trn2 device compute
# (p50/p99 each and their ratios, in one run).
go test ./fs -run '^$' -bench '^BenchmarkBasicInfoUnderCompute$' -benchtime 5000x -count "$count" | tee -a "$raw"
go test ./cmd/neuronfs -run '^$' -bench '^BenchmarkMountReady$' -benchtime 10x -count "$count" | tee -a "$raw"
# A Go test's testbed: New plus one command's first ioctl, then the teardown.
go test ./testbed -run '^$' -bench '^BenchmarkNewCommandTeardown$' -benchtime 10x -count "$count" | tee -a "$raw"
# The filter's cost, with and without it (--no-chardev), and the floor
# under any supervisor (a notified open answered at once, in C): one run
# of each per round, so all see the same minute of this shared machine.
go test -c -o "$raw.neuronfs.test" ./cmd/neuronfs
go test -c -o "$raw.chardev.test" ./internal/chardev
for _ in $(seq "$count"); do
	(cd cmd/neuronfs && "$raw.neuronfs.test" -test.run '^$' -test.bench '^(BenchmarkFilteredSyscalls|BenchmarkRunWorkload)$' -test.benchtime 1x -test.count 1) | tee -a "$raw"
	(cd internal/chardev && "$raw.chardev.test" -test.run '^$' -test.bench '^BenchmarkNotificationFloor$' -test.benchtime 1x -test.count 1) | tee -a "$raw"
done
(cd cmd/neuronfs && "$raw.neuronfs.test" -test.run '^$' -test.bench '^BenchmarkChardevOpenStorm$' -test.benchtime 1x -test.count 1) | tee -a "$raw"
rm -f "$raw.neuronfs.test" "$raw.chardev.test"
table=$("$benchstat" -col /impl -filter '.name:Ioctl' "$raw"; echo
	"$benchstat" -filter '.name:RoundTrip' "$raw"; echo
	"$benchstat" -col /impl -filter '.name:Copy' "$raw"; echo
	"$benchstat" -col /impl -filter '.name:MappedMemcpy' "$raw"; echo
	"$benchstat" -col /impl -filter '.name:DMABandwidth' "$raw"; echo
	"$benchstat" -col /impl -filter '.name:BARWriteUcode' "$raw"; echo
	"$benchstat" -filter '.name:(RingAllReduce OR MappedSemaphoreStore)' "$raw"; echo
	"$benchstat" -col /impl -filter '.name:Transports' "$raw"; echo
	"$benchstat" -col /transport -filter '.name:(Doorbell OR ExecDoorbell)' "$raw"; echo
	"$benchstat" -col /transport -filter '.name:ExecConcurrent' "$raw"; echo
	"$benchstat" -col /transport -filter '.name:OpenClose' "$raw"; echo
	"$benchstat" -col /impl -filter '.name:FilteredSyscalls' "$raw"; echo
	"$benchstat" -filter '.name:NotificationFloor' "$raw"; echo
	"$benchstat" -col /impl -filter '.name:RunWorkload' "$raw"; echo
	"$benchstat" -filter '.name:ChardevOpenStorm' "$raw"; echo
	"$benchstat" -filter '.name:MountReady' "$raw"; echo
	"$benchstat" -col /impl -filter '.name:(Matmul OR Elementwise)' "$raw"; echo
	scripts/transport-ratios.sh "$raw")
echo "$table"
if [ "${1:-}" = "--save" ]; then
	mkdir -p bench
	out="bench/results-$(date +%F).txt"
	{ echo "# scripts/bench.sh, $(date -u), $(nproc) cores, $(uname -r)"; echo "$table"; } > "$out"
	echo "saved $out"
fi
