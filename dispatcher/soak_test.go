//go:build soak

package dispatcher_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestSoakExactlyOnce is TestExactlyOnce at full size on each engine:
// 500 000 requests per run with 0–200 µs of CPU each, every fault injected.
// Run it with
//
//	go test -tags soak -run Soak -timeout 90m -v ./dispatcher/
func TestSoakExactlyOnce(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		runExactlyOnce(t, eng, faultRun{requests: 500_000, requesters: 64, workers: 8, maxWork: 200 * time.Microsecond, seed: 10, bound: 20 * time.Minute})
	})
}

// TestChurnSoakLong is the churn soak at full size: 10^6 membership
// operations (Resize, AddWorker, RemoveWorker, SetWeight) per engine
// beside Do/Submit/Go/group traffic, panics with a slow handler, groups
// capturing 64 KiB per fourth task (runChurnSoak). Besides exactly once
// and no leak it asserts flatness: heap in use, the median cost of an
// AddWorker+RemoveWorker pair and the median cost of a Do, measured at an
// idle moment after the first 1% of the operations and at the end, each
// within 2× of its value at 1%, and the worker indices (live workers plus
// removed ones still draining, at their most) within 64× the most live
// workers: without index reuse they would pass MaxWorkers. These are timed, so they run only here, not in the
// normal suite. Run it with
//
//	go test -tags soak -run TestChurnSoakLong -timeout 30m -v ./dispatcher
//
// CHURN_SOAK_OPS overrides the number of operations per engine.
func TestChurnSoakLong(t *testing.T) {
	ops := 1_000_000
	if s := os.Getenv("CHURN_SOAK_OPS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "CHURN_SOAK_OPS")
		ops = n
	}
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		rep := runChurnSoak(t, eng, churnSoak{ops: ops, maxLive: 8, bound: 25 * time.Minute, seed: 2})
		t.Logf("%v", rep)
		require.LessOrEqual(t, rep.end.heapInuse, 2*rep.early.heapInuse, "heap in use: %v at 1%%, %v at the end", rep.early, rep.end)
		require.LessOrEqual(t, rep.end.changeCost, 2*rep.early.changeCost, "membership change cost")
		require.LessOrEqual(t, rep.end.pickCost, 2*rep.early.pickCost, "pick cost")
		require.LessOrEqual(t, rep.end.indices, 64*rep.mostLive, "worker indices")
	})
}

// mapSoakRSS is the most resident memory the whole test process may have
// used once the streams are done: a stream's memory is its window, so
// 10^8 items take no more than a thousand.
const mapSoakRSS = 64 << 20

// TestMapSoak streams 10^8 items through Map with Limit(1024) on each
// engine, empty tasks returning their item (the item's index), and checks
// that every result comes in input order and that the process's peak
// resident memory (VmHWM, which counts everything the process ever held:
// the runtime, the test binary, both engines' runs) stays under 64 MB. It
// takes minutes, so it runs only here, not in the normal suite. Run it with
//
//	go test -tags soak -run TestMapSoak -timeout 20m -v ./dispatcher
//
// MAP_SOAK_ITEMS overrides the number of items per engine, e.g.
// MAP_SOAK_ITEMS=1000000 for a smoke run in seconds.
func TestMapSoak(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS is read from /proc/self/status (VmHWM), which only Linux has")
	}
	n := 100_000_000
	if s := os.Getenv("MAP_SOAK_ITEMS"); s != "" {
		v, err := strconv.Atoi(s)
		require.NoError(t, err, "MAP_SOAK_ITEMS")
		require.Positive(t, v, "MAP_SOAK_ITEMS")
		n = v
	}
	before, err := vmHWM()
	require.NoError(t, err)
	t.Logf("VmHWM before the streams: %.1f MB", float64(before)/(1<<20))
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(runtime.GOMAXPROCS(0)))
		require.NoError(t, err)
		defer func() { require.NoError(t, d.Close(context.Background())) }()
		in := func(yield func(int) bool) {
			for i := range n {
				if !yield(i) {
					return
				}
			}
		}
		task := func(_ context.Context, i int) (int, error) { return i, nil }
		var next int
		var bad error
		start := time.Now()
		// 9 minutes per engine: both fit the 20 minute -timeout, and a
		// hang is reported with every goroutine's stack.
		within(t, 9*time.Minute, "a Map stream of "+strconv.Itoa(n)+" items", func() {
			for v, err := range dispatcher.Map(context.Background(), d, in, task, dispatcher.Limit(1024)) {
				if err == nil && v != next {
					err = fmt.Errorf("result %d is %d", next, v)
				}
				if err != nil {
					bad = err
					return
				}
				next++
			}
		})
		elapsed := time.Since(start)
		require.NoError(t, bad)
		require.Equal(t, n, next, "results")
		hwm, err := vmHWM()
		require.NoError(t, err)
		t.Logf("%d items in %v (%.0f ns an item); VmHWM %.1f MB", n, elapsed.Round(time.Millisecond),
			float64(elapsed.Nanoseconds())/float64(n), float64(hwm)/(1<<20))
		assert.Less(t, hwm, uint64(mapSoakRSS), "VmHWM, bytes")
	})
}

// vmHWM returns the process's peak resident set size, in bytes.
func vmHWM() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmHWM: %w", err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no VmHWM line in /proc/self/status")
}
