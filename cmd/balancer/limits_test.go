package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// -requests sizes nothing any more: 10^9 requests (once about 50 GB of
// samples) and 2^48 (once a makeslice panic, like 2^63-1, which is now
// refused as bad input) start at once in a fixed amount of memory; an
// interrupt reports the requests asked and those answered.
func TestHugeRequests(t *testing.T) {
	for _, n := range []int{1_000_000_000, min(maxRequests, math.MaxInt)} { // 2^31-1 where int is 32 bits
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			defer cancel()
			code, out, errs := runCtx(t, ctx, "-requests", fmt.Sprint(n), "-requesters", "8", "-workers", "4", "-work", "20us", "-json")
			require.Equal(t, exitInterrupted, code, errs)
			runtime.ReadMemStats(&after)
			assert.Less(t, after.Sys-before.Sys, uint64(256<<20), "memory obtained from the OS during the run")
			var r Report
			require.NoError(t, json.Unmarshal([]byte(out), &r), out)
			assert.Equal(t, n, r.Requests)
			assert.True(t, r.Interrupted)
			assert.Positive(t, r.Completed)
			assert.Less(t, r.Completed+r.Errors, n)
			assert.Positive(t, r.Latency.P50)
			assert.LessOrEqual(t, r.Latency.P99, r.Latency.Max)
		})
	}
}

// The maxima are accepted; one past them is bad input (TestBadInput).
func TestBoundsAccepted(t *testing.T) {
	for _, args := range [][]string{
		{"-requests", fmt.Sprint(min(maxRequests, math.MaxInt))}, {"-requesters", "65536"}, {"-work", "1s"},
		{"-workers", "2", "-speeds", "0.01,1e6"}, {"-picks", "10000000"},
	} {
		_, err := parseConfig(args, nil)
		assert.NoError(t, err, args)
	}
}

// Large tables show their first and last rows and their totals, -all
// every row; the JSON always has every worker.
func TestLargeTablesSummarised(t *testing.T) {
	args := []string{"-requests", "400", "-requesters", "8", "-workers", "100", "-work", "10us", "-worker-buffer", "1"}
	row := regexp.MustCompile(`(?m)^\s+(\d+)\s+1\s+1\s+\d+\s+[\d.]+%\s+\d+\s*$`)

	code, out, errs := runArgs(t, args...)
	require.Equal(t, exitOK, code, errs)
	rows := row.FindAllStringSubmatch(out, -1)
	require.Len(t, rows, maxRows, out)
	assert.Equal(t, "0", rows[0][1])
	assert.Equal(t, "15", rows[15][1])
	assert.Equal(t, "84", rows[16][1])
	assert.Equal(t, "99", rows[31][1])
	assert.Contains(t, out, " 68 workers not shown (-all shows every row)\n")
	assert.Regexp(t, `(?m)^\s*all 100\s+100\s+400\s+100%\s+\d+\s*$`, out)

	code, out, errs = runArgs(t, append(args, "-all")...)
	require.Equal(t, exitOK, code, errs)
	assert.Len(t, row.FindAllString(out, -1), 100)
	assert.NotContains(t, out, "not shown")

	r := runReport(t, args...)
	assert.Len(t, r.PerWorker, 100)
}

func TestLargePicksSummarised(t *testing.T) {
	code, out, errs := runArgs(t, "-picks", "100000", "-strategy", "round-robin")
	require.Equal(t, exitOK, code, errs)
	assert.Equal(t, maxRows, strings.Count(out, "pick "), out)
	assert.Contains(t, out, "pick 15: worker 7 (weight 1)\n… 99968 picks not shown (-all prints every one)\npick 99984: worker 0 (weight 1)\n")
	assert.Contains(t, out, "pick 99999: worker 7 (weight 1)\n")
	assert.Contains(t, out, "round-robin over 100000 picks")

	code, out, errs = runArgs(t, "-picks", "100000", "-strategy", "round-robin", "-all")
	require.Equal(t, exitOK, code, errs)
	assert.Equal(t, 100000, strings.Count(out, "pick "))

	// The counts table of many workers is cut like the per-worker one.
	w := strings.TrimSuffix(strings.Repeat("1,", 40), ",")
	code, out, errs = runArgs(t, "-picks", "400", "-strategy", "round-robin", "-weights", w)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, " 8 workers not shown (-all shows every row)\n")
	assert.Regexp(t, `(?m)^\s*all 40\s+40\s+400\s+100%\s+100%\s*$`, out)

	// Below the cap the JSON is complete.
	code, out, errs = runArgs(t, "-picks", "100000", "-json")
	require.Equal(t, exitOK, code, errs)
	var tr Trace
	require.NoError(t, json.Unmarshal([]byte(out), &tr))
	assert.Len(t, tr.Picks, 100000)
	assert.False(t, tr.Interrupted)
}

// An unwritable -plot is refused before the run starts: here a run of 10^9
// requests, which would otherwise run for minutes before failing.
func TestPlotCheckedBeforeTheRun(t *testing.T) {
	start := time.Now()
	code, out, errs := runArgs(t, "-requests", "1000000000", "-plot", "/nonexistent/x.png")
	assert.Less(t, time.Since(start), time.Second)
	require.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Equal(t, "balancer: -plot /nonexistent/x.png: directory /nonexistent does not exist\n", errs)

	if os.Geteuid() == 0 {
		t.Log("as root every directory is writable: the read-only case is not checked")
		return
	}
	dir := filepath.Join(t.TempDir(), "ro")
	require.NoError(t, os.Mkdir(dir, 0o500))
	code, _, errs = runArgs(t, "-requests", "1000000000", "-plot", filepath.Join(dir, "x.png"))
	require.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "cannot write in "+dir)
}
