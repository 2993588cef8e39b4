#!/usr/bin/env bash
# ab.sh compares two builds of the benchmarks in interleaved rounds, each
# sample labelled with the machine's phase (internal/pingpong), and prints
# benchstat's comparison for each phase that has samples.
#
# Usage: benchmarks/ab.sh OLD.test NEW.test REGEXP [ROUNDS] [BENCHTIME]
#   OLD.test, NEW.test  test binaries of this module built at two commits:
#                       git worktree add /tmp/old REV && (cd /tmp/old/benchmarks && go test -c -o /tmp/old.test .)
#   REGEXP              the -test.bench pattern, e.g. 'Batch/impl=balancer-channels$/kind=empty$'
#   ROUNDS              default 10; BENCHTIME default 300ms
# Raw samples stay in a temporary directory named at the end.
set -euo pipefail
[ $# -ge 3 ] || { sed -n 2,12p "$0" >&2; exit 2; }
old=$1 new=$2 re=$3 rounds=${4:-10} bt=${5:-300ms}
cd "$(dirname "$0")"
dir=$(mktemp -d)
go build -o "$dir/pingpong" ./internal/pingpong
for r in $(seq "$rounds"); do
	for v in old new; do
		bin=$old
		[ "$v" = new ] && bin=$new
		p=$("$dir/pingpong")
		phase=fast
		[ "$p" -gt 300 ] && phase=slow
		"$bin" -test.run '^$' -test.bench "$re" -test.benchtime "$bt" -test.benchmem | grep '^Benchmark' >>"$dir/$v-$phase.txt" || true
	done
	echo "round $r/$rounds done (last probe $p ns)" >&2
done
for phase in fast slow; do
	if [ -s "$dir/old-$phase.txt" ] && [ -s "$dir/new-$phase.txt" ]; then
		echo "== $phase phase"
		if command -v benchstat >/dev/null; then
			benchstat "$dir/old-$phase.txt" "$dir/new-$phase.txt"
		else
			cat "$dir/old-$phase.txt" "$dir/new-$phase.txt"
		fi
	fi
done
echo "raw samples: $dir" >&2
