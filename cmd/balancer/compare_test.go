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
		assert.Equal(t, "channels", r.Engine, "the default engine")
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
		assert.EqualValues(t, []int{0, 3, 15}[i], v.Value, "a JSON number")
		assert.Len(t, v.Throughputs, 2)
		assert.Len(t, v.P99s, 2)
		assert.Positive(t, v.MedianThroughput)
		assert.False(t, v.Significant, "two rounds can never reach p < 0.05")
	}
	assert.InDelta(t, 1, rr.Values[0].Ratio, 1e-12)

	code, out, errs = runArgs(t, with("-worker-buffer", "0,4", "-rounds", "2", "-v")...)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "worker buffer, 2 interleaved rounds")
	assert.Contains(t, out, "\nengine channels, completion buffer 4, intake buffer 4 × (worker buffer + 1), seed 1\n")
	assert.Contains(t, out, "baseline")
	assert.Contains(t, out, "within noise")
	assert.Contains(t, out, "Mann-Whitney U against worker buffer 0")
	assert.Contains(t, out, "note: with 2 rounds")
	assert.Contains(t, errs, "round 2: worker buffer 4:")
}

// The rings engine has no completion channel: a -completion-buffer on it
// would be accepted and ignored, so it is refused before anything runs.
func TestCompletionBufferNeedsChannels(t *testing.T) {
	for _, tt := range []struct {
		args []string
		line string
	}{
		{with("-engine", "rings", "-completion-buffer", "0"),
			"balancer: -completion-buffer needs -engine channels: the rings engine has no completion channel\n"},
		{with("-engine", "rings", "-completion-buffer", "0,64", "-rounds", "3"),
			"balancer: -completion-buffer needs -engine channels: the rings engine has no completion channel\n"},
	} {
		code, out, errs := runArgs(t, tt.args...)
		assert.Equal(t, exitUsage, code, tt.args)
		assert.Empty(t, out)
		assert.Equal(t, tt.line, errs)
	}
}

// roundsTable checks the text table of a rounds run over the values of
// title, the first being the baseline.
func roundsTable(t *testing.T, out, title string, values ...string) {
	t.Helper()
	assert.Contains(t, out, title+", 3 interleaved rounds: strategy least-pending")
	assert.Regexp(t, `(?m)^\s*`+title+`\s+median req/s\s+median p99\s+ratio\s+p \(req/s\)\s+p \(p99\)\s+verdict\s*$`, out)
	assert.Regexp(t, `(?m)^\s*`+values[0]+`\s+\d+\s+\S+\s+1\.000\s+-\s+-\s+baseline\s*$`, out)
	for _, v := range values[1:] {
		assert.Regexp(t, `(?m)^\s*`+v+`\s+\d+\s+\S+\s+\d+\.\d{3}\s+[01]\.\d{3}\s+[01]\.\d{3}\s+within noise\s*$`, out)
	}
	assert.Contains(t, out, "Mann-Whitney U against "+title+" "+values[0]+" over the rounds")
	assert.Contains(t, out, "note: with 3 rounds")
}

// roundsJSON runs args with -json and checks the rounds report over values.
func roundsJSON(t *testing.T, param string, values []any, args ...string) {
	t.Helper()
	code, out, errs := runArgs(t, append(args, "-json")...)
	require.Equal(t, exitOK, code, errs)
	var rr struct {
		Parameter string `json:"parameter"`
		Settings
		Rounds int `json:"rounds"`
		Values []struct {
			Parameter   string    `json:"parameter"`
			Value       any       `json:"value"`
			Throughputs []float64 `json:"throughputs_per_s"`
			Ratio       float64   `json:"throughput_ratio"`
			PThroughput float64   `json:"p_throughput"`
		} `json:"values"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rr), out)
	assert.Equal(t, param, rr.Parameter)
	assert.Equal(t, 3, rr.Rounds)
	require.Len(t, rr.Values, len(values))
	for i, v := range rr.Values {
		assert.Equal(t, param, v.Parameter)
		assert.EqualValues(t, values[i], v.Value)
		assert.Len(t, v.Throughputs, 3)
		assert.Positive(t, v.Ratio)
		assert.GreaterOrEqual(t, v.PThroughput, 0.0)
	}
	assert.InDelta(t, 1, rr.Values[0].Ratio, 1e-12)
	var top map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &top))
	assert.NotContains(t, top, param, "the list's own knob is in values")
	assert.Equal(t, uint64(1), rr.Seed)
	assert.Equal(t, "20µs", rr.Work)
	assert.Equal(t, "exp", rr.Dist)
	if param != "worker_buffer" {
		require.NotNil(t, rr.WorkerBuffer)
		assert.Equal(t, 16, *rr.WorkerBuffer)
		require.NotNil(t, rr.IntakeBuffer)
		assert.Equal(t, 4*17, *rr.IntakeBuffer)
	}
	if param == "engine" {
		require.NotNil(t, rr.CompletionBuffer, "the channels rounds' completion buffer")
		assert.Equal(t, 4*17, *rr.CompletionBuffer, "a slot per pending request")
	}
	if param == "completion_buffer" {
		assert.Equal(t, "channels", rr.Engine)
	}
}

// Paired rounds over the engines: the same machinery and table as a
// -worker-buffer list. Needs the channel engine.
func TestEngineRounds(t *testing.T) {
	code, out, errs := runArgs(t, with("-engine", "channels,rings", "-rounds", "3", "-v")...)
	require.Equal(t, exitOK, code, errs)
	roundsTable(t, out, "engine", "channels", "rings")
	assert.Contains(t, out, "\nworker buffer 16, intake buffer 68, completion buffer 68 on channels, seed 1\n")
	assert.Contains(t, errs, "round 3: engine rings:")

	roundsJSON(t, "engine", []any{"rings", "channels"}, with("-engine", "rings,channels", "-rounds", "3")...)
}

// Paired rounds over the channel engine's completion buffer, Pike's
// unbuffered channel first. Needs the channel engine.
func TestCompletionBufferRounds(t *testing.T) {
	args := with("-engine", "channels", "-completion-buffer", "0,64", "-rounds", "3")
	code, out, errs := runArgs(t, args...)
	require.Equal(t, exitOK, code, errs)
	roundsTable(t, out, "completion buffer", "0", "64")
	assert.Contains(t, out, "\nengine channels, worker buffer 16, intake buffer 68, seed 1\n")

	roundsJSON(t, "completion_buffer", []any{0, 64}, args...)
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
	assert.Empty(t, out, "no complete round: nothing to print")
	assert.Equal(t, "balancer: interrupted before there was anything to report; nothing printed\n", errs,
		"no mention of a report above when none was printed")
}
