#!/usr/bin/env bash
# rounds.sh runs the benchmarks in interleaved rounds: each round runs every
# implementation once, in a fresh random order, so slow drifts of a shared
# machine spread over all implementations instead of biasing whichever ran
# during a quiet minute (as -count back to back would). It then prints the
# medians with benchstat and the ratio table of docs/performance.md.
#
# Usage: benchmarks/rounds.sh [-r rounds] [-b 'Batch|Requesters|ClosedLoop'] [-k 'empty|exp10us']
#                             [-i 'balancer balancer-channels pike pond'] [-t benchtime] [-o raw.txt] [-hog]
#   -i    implementations, separated by spaces, each matching one impl= name
#         exactly (default: all of them):
#           balancer           our dispatcher on the rings engine
#           balancer-channels  our dispatcher on the channel engine
#           pike               the textbook balancer of Pike's 2012 talk
#           chanpool           N goroutines on one unbuffered channel
#           ants pond workerpool conc errgroup goroutine
#           balancer-wbN       rings with WithWorkerBuffer(N), N = 0 1 3 63 255 1023 (63: the default before the queues deepened)
#           balancer-ibN       rings with WithWorkerBuffer(63) and WithIntakeBuffer(N), N = 1024 4096
#         (the variants are experiments: not in the default list)
#   -hog  keep one core busy with another process during every round
# Raw output goes to -o (default: a temporary file); keep it out of git.
set -euo pipefail
cd "$(dirname "$0")"

rounds=5 bench='Batch|Requesters|ClosedLoop' kinds='empty|spin1us|spin10us|spin100us|exp10us'
impls='balancer balancer-channels chanpool pike ants pond workerpool conc errgroup goroutine'
benchtime=300ms out='' hog=0
while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=$2; shift 2 ;;
	-b) bench=$2; shift 2 ;;
	-k) kinds=$2; shift 2 ;;
	-i) impls=$2; shift 2 ;;
	-t) benchtime=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	-hog) hog=1; shift ;;
	*) echo "usage: $0 [-r rounds] [-b regexp] [-k kinds] [-i impls] [-t benchtime] [-o raw] [-hog]" >&2; exit 2 ;;
	esac
done

tmp=$(mktemp -d)
hogpid=''
cleanup() {
	if [ -n "$hogpid" ]; then kill "$hogpid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
[ -n "$out" ] || out=$tmp/raw.txt
: >"$out"

# One binary for every round: no build noise between rounds.
go test -c -o "$tmp/bench.test" .
go build -o "$tmp/pingpong" ./internal/pingpong
for r in $(seq "$rounds"); do
	# The machine's phase (internal/pingpong): compare ratios within one.
	echo "round $r/$rounds: cache line round trip $("$tmp/pingpong") ns (slow phase above 300)" >&2
	if [ "$hog" = 1 ]; then
		( while :; do :; done ) &
		hogpid=$!
	fi
	for impl in $(printf '%s\n' $impls | shuf); do
		# A leaf benchmark runs only if every pattern level matches, so
		# Requesters (no kind= level) gets its own pattern.
		for b in $(echo "$bench" | tr '|' ' '); do
			pat="^Benchmark$b\$/^impl=$impl\$"
			[ "$b" = Batch ] && pat="$pat/^kind=($kinds)\$"
			"$tmp/bench.test" -test.run '^$' -test.benchmem -test.count 1 \
				-test.benchtime "$benchtime" -test.bench "$pat" >>"$out"
		done
	done
	if [ -n "$hogpid" ]; then kill "$hogpid"; wait "$hogpid" 2>/dev/null || true; hogpid=''; fi
	echo "round $r/$rounds done" >&2
done

# A misspelt name matches no benchmark and would only go missing from the
# tables; -procs suffixes aside, names must match whole.
for impl in $impls; do
	grep -Eq "/impl=$impl([/[:space:]]|-[0-9]+[[:space:]])" "$out" ||
		echo "rounds.sh: no results for impl $impl (names: see the usage at the top)" >&2
done

if command -v benchstat >/dev/null; then
	benchstat -col /impl "$out"
fi
go run ./internal/ratios <"$out"
