package main

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	code, out, errs := runArgs(t, with("-completion-buffer", "0,4", "-rounds", "2", "-json")...)
	require.Equal(t, exitOK, code, errs)
	var rr RoundsReport
	require.NoError(t, json.Unmarshal([]byte(out), &rr))
	assert.Equal(t, 2, rr.Rounds)
	require.Len(t, rr.Values, 2)
	for _, v := range rr.Values {
		assert.Len(t, v.Throughputs, 2)
		assert.Len(t, v.P99s, 2)
	}
	assert.InDelta(t, 1, rr.Values[0].Ratio, 1e-12)
	assert.False(t, rr.Values[1].Significant, "two rounds can never reach p < 0.05")

	code, out, errs = runArgs(t, with("-completion-buffer", "0,4", "-rounds", "2")...)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "within noise")
	assert.Contains(t, out, "Mann-Whitney")
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
