package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A -schedule list runs interleaved rounds like the other lists, one
// value per schedule, and the single run's report names its schedule.
func TestScheduleList(t *testing.T) {
	code, out, errs := runArgs(t, with("-schedule", "fifo,fair", "-rounds", "2", "-json")...)
	require.Equal(t, exitOK, code, errs)
	var rr RoundsReport
	require.NoError(t, json.Unmarshal([]byte(out), &rr))
	assert.Equal(t, "schedule", rr.Parameter)
	assert.Empty(t, rr.Schedule, "the list's own setting is left out")
	assert.Equal(t, 2, rr.Rounds)
	require.Len(t, rr.Values, 2)
	for i, v := range rr.Values {
		assert.Equal(t, []string{"fifo", "fair"}[i], v.Value)
		assert.Len(t, v.Throughputs, 2)
		assert.Positive(t, v.MedianThroughput)
	}

	r := runReport(t, with("-schedule", "priority")...)
	assert.Equal(t, "priority", r.Schedule)
	assert.Equal(t, r.Requests, r.Completed)
	assert.Equal(t, "fifo", runReport(t, small...).Schedule, "the default")
	code, out, errs = runArgs(t, with("-schedule", "deadline")...)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "\nengine channels, schedule deadline, worker buffer 16")
}

// The tenants scenario reports both tenants under every schedule of the
// list, each having done work. No timing is asserted: the machine is shared.
func TestTenantsScenario(t *testing.T) {
	args := []string{"-scenario", "tenants", "-schedule", "fifo,fair", "-rounds", "2", "-duration", "400ms", "-workers", "4"}
	code, out, errs := runArgs(t, append(args, "-json")...)
	require.Equal(t, exitOK, code, errs)
	require.Equal(t, 1, strings.Count(out, "\n"), "one object on one line")
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	ts, ok := m["tenants"].([]any)
	require.True(t, ok, "a top-level tenants array: %s", out)
	require.Len(t, ts, 4)
	seen := map[string]bool{}
	for _, x := range ts {
		e := x.(map[string]any)
		for _, k := range []string{"name", "schedule", "unit", "completed", "failed", "throughput", "p50_ms", "p99_ms", "dispatched"} {
			assert.Contains(t, e, k)
		}
		name, sched := e["name"].(string), e["schedule"].(string)
		seen[sched+"/"+name] = true
		assert.Positive(t, e["completed"].(float64), "%s under %s", name, sched)
		assert.Positive(t, e["throughput"].(float64), "%s under %s", name, sched)
		assert.Positive(t, e["dispatched"].(float64), "%s under %s", name, sched)
		assert.LessOrEqual(t, e["p50_ms"].(float64), e["p99_ms"].(float64))
		assert.Equal(t, map[string]string{"interactive": "group", "background": "task"}[name], e["unit"])
	}
	assert.Equal(t, map[string]bool{"fifo/interactive": true, "fifo/background": true,
		"fair/interactive": true, "fair/background": true}, seen)
	var rep TenantsReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, "tenants", rep.Scenario)
	assert.Equal(t, 2, rep.Rounds)
	assert.Equal(t, "400ms", rep.Duration)
	assert.False(t, rep.Interrupted)
	for _, ts := range rep.Tenants {
		// Every group dispatched 3 tasks; the groups cut short at the end
		// of a slice dispatched some too.
		if ts.Name == "interactive" {
			assert.GreaterOrEqual(t, ts.Dispatched, 3*ts.Completed)
		}
	}

	code, out, errs = runArgs(t, "-scenario", "tenants", "-duration", "200ms", "-workers", "2")
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "tenants scenario: strategy least-pending, 2 workers")
	assert.Regexp(t, `fifo\s+interactive\s+\d+ groups`, out)
	assert.Regexp(t, `fifo\s+background\s+\d+ tasks`, out)
	assert.Contains(t, out, "completion time: interactive, a whole group of 3 tasks")
}

// The tenants scenario runs one worker per core unless -workers,
// -nWorker or -weights say otherwise, and says so when there are more
// workers than cores (Go's scheduler then decides as much as the
// schedule). The requesters' workload keeps its default of 8.
func TestTenantsWorkersDefault(t *testing.T) {
	c, err := parseConfig([]string{"-scenario", "tenants"}, nil)
	require.NoError(t, err)
	assert.Equal(t, runtime.GOMAXPROCS(0), c.workers)
	c, err = parseConfig([]string{"-scenario", "tenants", "-nWorker", "5"}, nil)
	require.NoError(t, err)
	assert.Equal(t, 5, c.workers)
	c, err = parseConfig([]string{"-scenario", "tenants", "-weights", "1,1,2"}, nil)
	require.NoError(t, err)
	assert.Equal(t, 3, c.workers)
	c, err = parseConfig(nil, nil)
	require.NoError(t, err)
	assert.Equal(t, 8, c.workers)

	more := runtime.GOMAXPROCS(0) + 1
	code, out, errs := runArgs(t, "-scenario", "tenants", "-duration", "100ms", "-workers", strconv.Itoa(more))
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, fmt.Sprintf("note: %d workers on %d cores (GOMAXPROCS)", more, runtime.GOMAXPROCS(0)))
	code, out, errs = runArgs(t, "-scenario", "tenants", "-duration", "100ms")
	require.Equal(t, exitOK, code, errs)
	assert.NotContains(t, out, "note:")
}
