//go:build soak

package dispatcher_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

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
