package main

import (
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompare(t *testing.T) {
	names := []string{"least-pending", "round-robin", "p2c"}
	code, out, errs := runArgs(t, with("-compare", strings.Join(names, ","))...)
	require.Equal(t, exitOK, code, errs)
	rows := 0
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && (f[0] == names[0] || f[0] == names[1] || f[0] == names[2]) {
			rows++
		}
	}
	assert.Equal(t, len(names), rows, out)

	code, out, errs = runArgs(t, with("-compare", strings.Join(names, ","), "-json")...)
	require.Equal(t, exitOK, code, errs)
	var reports []Report
	require.NoError(t, json.Unmarshal([]byte(out), &reports))
	require.Len(t, reports, len(names))
	for i, r := range reports {
		assert.Equal(t, names[i], r.Strategy)
		assert.Equal(t, r.Requests, r.Completed+r.Errors)
	}
}

func TestRounds(t *testing.T) {
	code, out, errs := runArgs(t, with("-worker-buffer", "0,3,15", "-rounds", "2", "-json")...)
	require.Equal(t, exitOK, code, errs)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	assert.Equal(t, "worker_buffer", m["parameter"])
	v0 := m["values"].([]any)[0].(map[string]any)
	assert.Equal(t, "worker_buffer", v0["parameter"])
	assert.EqualValues(t, 0, v0["value"])
	var rr RoundsReport
	require.NoError(t, json.Unmarshal([]byte(out), &rr))
	assert.Equal(t, 2, rr.Rounds)
	assert.Equal(t, "least-pending", rr.Strategy)
	require.Len(t, rr.Values, 3)
	for i, v := range rr.Values {
		assert.Equal(t, []int{0, 3, 15}[i], v.Value)
		assert.Len(t, v.Throughputs, 2)
		assert.Len(t, v.P99s, 2)
		assert.Positive(t, v.MedianThroughput)
		assert.False(t, v.Significant, "two rounds can never reach p < 0.05")
	}
	assert.InDelta(t, 1, rr.Values[0].Ratio, 1e-12)

	code, out, errs = runArgs(t, with("-worker-buffer", "0,4", "-rounds", "2", "-v")...)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "worker buffer, 2 interleaved rounds")
	assert.Contains(t, out, "baseline")
	assert.Contains(t, out, "within noise")
	assert.Contains(t, out, "Mann-Whitney U against worker buffer 0")
	assert.Contains(t, out, "note: with 2 rounds")
	assert.Contains(t, errs, "round 2: worker buffer 4:")
}

// -completion-buffer has no effect since the completion channel became
// per-worker counters: one value still runs; a list is refused.
func TestCompletionBufferKept(t *testing.T) {
	r := runReport(t, with("-completion-buffer", "0")...)
	assert.Equal(t, 400, r.Completed)
	code, out, errs := runArgs(t, with("-completion-buffer", "0,8", "-rounds", "3")...)
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errs, "no completion channel")
}

func TestPlot(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		with("-plot", filepath.Join(dir, "run.png"), "-churn", "10ms"),
		{"-picks", "300", "-strategy", "iwrr", "-weights", "100,100,66", "-plot", filepath.Join(dir, "picks.png")},
	} {
		code, _, errs := runArgs(t, args...)
		require.Equal(t, exitOK, code, errs)
		path := args[len(args)-1]
		if args[0] != "-picks" {
			path = args[len(args)-3]
		}
		f, err := os.Open(path)
		require.NoError(t, err)
		_, err = png.Decode(f)
		f.Close()
		require.NoError(t, err)
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Less(t, st.Size(), int64(200<<10))
	}
}

// An interrupt during the rounds keeps only complete rounds (none here) and
// exits 130 without printing NaN medians.
func TestRoundsInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	defer cancel()
	code, out, errs := runCtx(t, ctx, "-requests", "200000", "-requesters", "8", "-workers", "4", "-work", "50us",
		"-worker-buffer", "0,15", "-rounds", "2", "-json")
	require.Equal(t, exitInterrupted, code, errs)
	assert.NotContains(t, out, "NaN")
	assert.Contains(t, errs, "interrupted")
}
