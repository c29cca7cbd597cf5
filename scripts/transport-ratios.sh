#!/usr/bin/env bash
# The default FUSE transport against the other, path by path, from the raw
# output of benchmarks that ran on both in the same run (scripts/bench.sh):
#   scripts/transport-ratios.sh RAW
# Each row is one metric of one path: the classic and io_uring values
# (benchstat's medians), their ratio io_uring / classic, and benchstat's
# p-value. A row where io_uring is worse (slower, or fewer per second) with
# p < 0.05 is marked WORSE: io_uring is the default only where it is
# nowhere worse than the other transport.
set -euo pipefail
raw=${1:?usage: transport-ratios.sh RAW}
benchstat=${BENCHSTAT:-$(go env GOPATH)/bin/benchstat}
# The paths measured on both transports: the projection naming the
# transport, and benchstat's filter for them.
paths=(
	'/impl@(classic uring)|.name:Transports'
	'/transport@(classic uring)|.name:(Doorbell OR ExecDoorbell OR ExecConcurrent OR OpenClose)'
)
for p in "${paths[@]}"; do
	"$benchstat" -format csv -col "${p%%|*}" -filter "${p#*|}" "$raw" 2>/dev/null
	echo
done | awk -F, '
	# A block: a header naming the columns, a line of units, then rows.
	$1 == "" && $2 == "classic" { hdr = 1; next }
	hdr == 1 { unit = $2; hdr = 2; next }
	$0 == "" { hdr = 0; next }
	hdr == 2 && $1 != "geomean" {
		# The floors are the bare go-fuse server, the same on both runs.
		if (unit ~ /floor/ || $2 + 0 == 0) next
		ratio = $4 / $2
		p = $7; sub(/^p=/, "", p); sub(/ .*/, "", p)
		higher = unit ~ /\/s$/ # a rate: more is better
		worse = (higher ? ratio < 1 : ratio > 1) && p != "" && p + 0 < 0.05
		if (worse) nworse++
		rows[n++] = sprintf("%-52s %-20s %12.4g %12.4g %6.2f %7s %s", $1, unit, $2, $4, ratio, p, worse ? "WORSE" : "")
	}
	END {
		printf "%-52s %-20s %12s %12s %6s %7s\n", "path (default: io_uring where offered)", "metric", "classic", "uring", "ratio", "p"
		for (i = 0; i < n; i++) print rows[i]
		printf "%d metric(s) where the default transport is worse than classic (p < 0.05)\n", nworse
	}'
