package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The report's JSON fields are a stable interface: exactly these names.
func TestJSONSchema(t *testing.T) {
	code, out, errs := runArgs(t, with("-engine", "rings", "-json")...)
	require.Equal(t, exitOK, code, errs)
	require.Equal(t, 1, strings.Count(out, "\n"), "one object on one line")
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	keys := func(m map[string]any) []string {
		var k []string
		for n := range m {
			k = append(k, n)
		}
		return k
	}
	assert.ElementsMatch(t, []string{"strategy", "requesters", "workers", "engine", "schedule", "worker_buffer", "intake_buffer",
		"seed", "work", "dist", "requests", "interrupted", "completed", "errors", "panics", "cancelled", "elapsed_ns",
		"throughput_per_s", "latency_ns", "pending", "per_worker"}, keys(m), "no completion_buffer on rings")
	assert.ElementsMatch(t, []string{"p50", "p90", "p99", "max"}, keys(m["latency_ns"].(map[string]any)))
	assert.ElementsMatch(t, []string{"mean", "stddev"}, keys(m["pending"].(map[string]any)))
	pw := m["per_worker"].([]any)
	require.Len(t, pw, 4)
	assert.ElementsMatch(t, []string{"index", "weight", "completed", "share", "max_pending"}, keys(pw[0].(map[string]any)))

	r := runReport(t, small...)
	assert.Equal(t, "least-pending", r.Strategy)
	assert.Equal(t, 400, r.Requests)
	assert.Equal(t, 400, r.Completed)
	assert.False(t, r.Interrupted)
	assert.Positive(t, r.Throughput)
	assert.LessOrEqual(t, r.Latency.P50, r.Latency.P90)
	assert.LessOrEqual(t, r.Latency.P90, r.Latency.P99)
	assert.LessOrEqual(t, r.Latency.P99, r.Latency.Max)
	var done int64
	var share float64
	for _, w := range r.PerWorker {
		done += w.Completed
		share += w.Share
	}
	assert.Equal(t, int64(400), done)
	assert.InDelta(t, 1, share, 1e-9)
}

// The settings in the report are those the run passed to the dispatcher;
// completion_buffer is there on the channel engine only, 0 included.
func TestJSONSettings(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want map[string]any
	}{
		{nil, map[string]any{"engine": "channels", "worker_buffer": 16.0, "completion_buffer": 4 * 17.0,
			"intake_buffer": 4 * 17.0, "seed": 1.0, "work": "20µs", "dist": "exp"}},
		{[]string{"-engine", "rings", "-worker-buffer", "3", "-seed", "7", "-dist", "const", "-work", "1ms", "-requests", "40"},
			map[string]any{"engine": "rings", "worker_buffer": 3.0, "intake_buffer": 4 * 4.0,
				"seed": 7.0, "work": "1ms", "dist": "const"}},
		{[]string{"-engine", "channels"}, map[string]any{"engine": "channels", "worker_buffer": 16.0,
			"completion_buffer": 4 * 17.0, "intake_buffer": 4 * 17.0}},
		{[]string{"-engine", "channels", "-completion-buffer", "0", "-worker-buffer", "0"},
			map[string]any{"engine": "channels", "worker_buffer": 0.0, "completion_buffer": 0.0, "intake_buffer": 4.0}},
	} {
		code, out, errs := runArgs(t, with(append(tt.args, "-json")...)...)
		require.Equal(t, exitOK, code, errs)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m))
		for k, v := range tt.want {
			assert.Equal(t, v, m[k], "%s in %v", k, tt.args)
		}
		_, has := m["completion_buffer"]
		assert.Equal(t, tt.want["engine"] == "channels", has, "completion_buffer in %v", tt.args)
		assert.Equal(t, m["requests"], m["completed"], tt.args)
	}
}

func TestHumanReport(t *testing.T) {
	code, out, errs := runArgs(t, with("-weights", "2,1,1,1", "-speeds", "1,1,0.5,1")...)
	require.Equal(t, exitOK, code, errs)
	for _, s := range []string{"throughput", "latency: p50", "p90", "p99", "max", "pending over the run (Pike): mean",
		"stddev", "worker  weight  speed  completed  share  max pending", "0.5",
		"\nengine channels, worker buffer 16, completion buffer 68, intake buffer 68\n"} {
		assert.Contains(t, out, s)
	}
	code, out, errs = runArgs(t, "-requests", "400", "-nRequester", "8", "-nWorker", "2", "-work", "20us",
		"-engine", "channels", "-completion-buffer", "0", "-worker-buffer", "3")
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "strategy least-pending: 8 requesters, 2 workers, 400 requests")
	assert.Contains(t, out, "\nengine channels, worker buffer 3, completion buffer 0, intake buffer 8\n")
}

// Every request is answered exactly once, whatever the faults:
// completed + errors == requests, panics and cancellations among errors.
// On each engine (the channel one with Pike's unbuffered completions).
func TestFaultsAccountForEveryRequest(t *testing.T) {
	for _, e := range [][]string{{"-engine", "rings"}, {"-engine", "channels", "-completion-buffer", "0"}} {
		t.Run(e[1], func(t *testing.T) { faultsAccount(t, e...) })
	}
}

func faultsAccount(t *testing.T, engine ...string) {
	r := runReport(t, with(append(engine, "-requests", "600", "-panic-rate", "0.1", "-cancel-rate", "0.2",
		"-churn", "5ms", "-worker-buffer", "2")...)...)
	assert.Equal(t, 600, r.Requests)
	assert.Equal(t, r.Requests, r.Completed+r.Errors)
	assert.Positive(t, r.Panics)
	assert.Positive(t, r.Cancelled)
	assert.LessOrEqual(t, r.Panics+r.Cancelled, r.Errors)
	assert.Less(t, r.Panics, 600*2/10, "about 10%% panic")
	ran := r.RetiredCompleted // workers removed by -churn whose index was reused
	for _, w := range r.PerWorker {
		ran += w.Completed
	}
	// Workers ran the completed and panicked requests, plus cancelled ones
	// that reached a worker (which answered without running them).
	assert.GreaterOrEqual(t, ran, int64(r.Completed+r.Panics))
}

func TestSameSeedSameWork(t *testing.T) {
	a := runReport(t, with("-strategy", "round-robin", "-panic-rate", "0.2")...)
	b := runReport(t, with("-strategy", "round-robin", "-panic-rate", "0.2")...)
	assert.Equal(t, a.Panics, b.Panics)
	for i := range a.PerWorker {
		assert.Equal(t, a.PerWorker[i].Completed, b.PerWorker[i].Completed)
	}
}

func TestSpeedsFollowThePick(t *testing.T) {
	// Round-robin gives each worker the same count; with worker 1 ten
	// times slower, it holds the most pending at once.
	r := runReport(t, "-requests", "400", "-requesters", "16", "-workers", "2", "-work", "50us",
		"-dist", "const", "-strategy", "round-robin", "-speeds", "1,0.1")
	assert.Equal(t, r.PerWorker[0].Completed, r.PerWorker[1].Completed)
	assert.Greater(t, r.PerWorker[1].MaxPending, r.PerWorker[0].MaxPending)
}

// An interrupt stops intake, drains, prints the partial report and returns
// promptly; goleak (TestMain) checks that nothing is left running.
func TestInterrupt(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		args := []string{"-requests", "200000", "-requesters", "8", "-workers", "4", "-work", "50us"}
		if asJSON {
			args = append(args, "-json")
		}
		start := time.Now()
		code, out, errs := runCtx(t, ctx, args...)
		cancel()
		assert.Less(t, time.Since(start), 3*time.Second)
		require.Equal(t, exitInterrupted, code, errs)
		assert.Contains(t, errs, "interrupted")
		if !asJSON {
			assert.Contains(t, out, "INTERRUPTED after")
			continue
		}
		// requests is what was asked, completed + errors what was answered.
		var r Report
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		assert.True(t, r.Interrupted)
		assert.Equal(t, 200000, r.Requests)
		assert.Less(t, r.Completed+r.Errors, 200000)
		assert.Positive(t, r.Completed+r.Errors)
		assert.Contains(t, out, `"interrupted":true`)
	}
}

func TestVerboseLoadLines(t *testing.T) {
	code, _, errs := runArgs(t, "-requests", "3000", "-requesters", "8", "-workers", "3", "-work", "100us", "-v")
	require.Equal(t, exitOK, code, errs)
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	require.NotEmpty(t, lines)
	assert.Regexp(t, `^(\s*\d+ ){3}\|\s+[\d.]+\s+[\d.]+$`, lines[0])
}
