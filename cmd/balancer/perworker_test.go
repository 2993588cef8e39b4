package main

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
)

// probe is a stand-in strategy, never picked: the dispatcher refuses it
// before it starts.
type probe struct{ strategies.Strategy }

// The demo's dispatcher builds the strategy itself, by name, as it does
// for any user: adding a strategy of our own to the demo's options is
// refused as a second strategy, so none is in them (a wrapper would be).
// Its optional interfaces then apply: least-pending, the default, takes
// batched completions (BatchDone) and follows -churn (Dynamic).
func TestDemoStrategyIsTheLibrarys(t *testing.T) {
	for _, name := range strategies.Names() {
		c, err := parseConfig([]string{"-strategy", name, "-workers", "3"}, io.Discard)
		require.NoError(t, err)
		opts := dispatcherOptions(c, c.setupWith(nil))
		d, err := dispatcher.New(append(opts, dispatcher.WithStrategy(probe{}))...)
		require.ErrorIs(t, err, dispatcher.ErrBadOption, name)
		require.ErrorContains(t, err, "WithStrategy and WithStrategyName both given", name)
		require.Nil(t, d)
	}
	s, err := strategies.New(strategies.Default, strategies.Equal(3))
	require.NoError(t, err)
	assert.Implements(t, (*strategies.BatchDone)(nil), s)
	assert.Implements(t, (*strategies.Dynamic)(nil), s)
}

// With least-pending, a worker ten times slower finishes far fewer
// requests: the speed a task applies is its own worker's.
func TestSpeedsSlowTheirWorker(t *testing.T) {
	for _, engine := range []string{"rings", "channels"} {
		r := runReport(t, "-requests", "600", "-requesters", "16", "-workers", "2", "-work", "50us",
			"-dist", "const", "-speeds", "1,0.1", "-engine", engine)
		fast, slow := r.PerWorker[0].Completed, r.PerWorker[1].Completed
		assert.Greater(t, fast, 2*slow, "%s: fast %d, slow %d", engine, fast, slow)
	}
}

// -churn replaces worker k by worker n+k: the replacement runs at its speed.
func TestSpeedsFollowChurn(t *testing.T) {
	c, err := parseConfig([]string{"-workers", "3", "-speeds", "1,0.5,2"}, io.Discard)
	require.NoError(t, err)
	w := newWorkers(c, false)
	assert.Equal(t, []float64{1, 0.5, 2, 1, 0.5, 2, 1}, w.speeds(7))
}

// One routing key under consistent-hash sends every request to one
// worker: -keys reaches the strategy as given.
func TestKeysReachTheStrategy(t *testing.T) {
	r := runReport(t, with("-strategy", "consistent-hash", "-keys", "1")...)
	var busy []int
	for _, w := range r.PerWorker {
		if w.Completed > 0 {
			busy = append(busy, w.Index)
		}
	}
	require.Len(t, busy, 1, "%+v", r.PerWorker)
	r = runReport(t, with("-strategy", "consistent-hash")...)
	busy = busy[:0]
	for _, w := range r.PerWorker {
		if w.Completed > 0 {
			busy = append(busy, w.Index)
		}
	}
	assert.Greater(t, len(busy), 1, "a key per request spreads: %+v", r.PerWorker)
}

// -plot's counts per worker are what the tasks recorded from their
// worker index: without cancellations, each worker's completed requests,
// plus, under -churn, those of removed workers whose index a later one
// took (RetiredCompleted).
func TestPlotCountsAreTheWorkers(t *testing.T) {
	c, err := parseConfig(with("-plot", filepath.Join(t.TempDir(), "p.png"), "-churn", "2ms"), io.Discard)
	require.NoError(t, err)
	c.progress = false // a bar is for a terminal (run decides it)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := runOnce(ctx, c, newPlan(c), c.setupWith(nil), io.Discard)
	require.NoError(t, err)
	require.Equal(t, 400, res.cum.t)
	total, counted := res.RetiredCompleted, int64(0)
	for _, w := range res.PerWorker {
		got := 0
		if w.Index < len(res.cum.count) {
			got = res.cum.count[w.Index]
		}
		assert.GreaterOrEqual(t, int64(got), w.Completed, "worker %d", w.Index)
		total += w.Completed
	}
	for _, n := range res.cum.count {
		counted += int64(n)
	}
	assert.Equal(t, total, counted, "every request counted at the index that ran it")
	assert.Len(t, res.speeds, len(res.PerWorker))
}
