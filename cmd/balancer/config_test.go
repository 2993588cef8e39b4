package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // in the one stderr line
	}{
		{"unknown strategy", []string{"-strategy", "nope"}, `unknown strategy "nope" (valid: `},
		{"unknown in compare", []string{"-compare", "round-robin,nope"}, `unknown strategy "nope"`},
		{"zero workers", []string{"-workers", "0"}, "-workers must be positive"},
		{"negative workers", []string{"-workers", "-3"}, "-workers must be positive"},
		{"zero requests", []string{"-requests", "0"}, "-requests must be positive"},
		{"zero requesters", []string{"-requesters", "0"}, "-requesters must be positive"},
		{"negative weight", []string{"-weights", "1,-1,2"}, "member 1 has weight -1"},
		{"all-zero weights", []string{"-weights", "0,0"}, "every weight is zero"},
		{"malformed weights", []string{"-weights", "1,,2"}, "malformed list"},
		{"non-numeric weights", []string{"-weights", "1,x"}, `"x" is not an integer`},
		{"negative worker buffer", []string{"-worker-buffer", "-1"}, "-worker-buffer must be >= 0"},
		{"negative worker buffer in list", []string{"-worker-buffer", "0,-8"}, "-worker-buffer must be >= 0"},
		{"malformed worker buffer list", []string{"-worker-buffer", "0,"}, "malformed list"},
		{"non-numeric worker buffer", []string{"-worker-buffer", "many"}, `"many" is not an integer`},
		{"empty worker buffer", []string{"-worker-buffer", ""}, "-worker-buffer needs a value"},
		{"duplicate worker buffer", []string{"-worker-buffer", "0,15,0"}, "-worker-buffer: 0 is listed twice"},
		{"negative completion buffer", []string{"-completion-buffer", "-1"}, "-completion-buffer must be >= 0"},
		{"malformed completion list", []string{"-completion-buffer", "0,"}, "malformed list"},
		{"duplicate completion buffer", []string{"-engine", "channels", "-completion-buffer", "8,0,8"},
			"-completion-buffer: 8 is listed twice"},
		{"completion buffer on rings", []string{"-engine", "rings", "-completion-buffer", "8"},
			"-completion-buffer needs -engine channels: the rings engine has no completion channel"},
		{"completion list on rings", []string{"-completion-buffer", "0,8", "-rounds", "3", "-engine", "rings"},
			"-completion-buffer needs -engine channels: the rings engine has no completion channel"},
		{"completion buffer with an engine list", []string{"-engine", "channels,rings", "-completion-buffer", "8"},
			"-completion-buffer needs -engine channels: the rings engine has no completion channel"},
		{"too many workers", []string{"-workers", "65537"}, "-workers must be at most 65536 (dispatcher.MaxWorkers), got 65537"},
		{"too many nWorker", []string{"-nWorker", "100000"}, "-nWorker must be at most 65536"},
		{"worker buffer at the maximum", []string{"-worker-buffer", "1048576"},
			"-worker-buffer must be below 1048576 (dispatcher.MaxBuffer), got 1048576"},
		{"worker buffer overflowing", []string{"-worker-buffer", "0,9223372036854775807"}, wordSize("-worker-buffer must be below 1048576", `-worker-buffer: "9223372036854775807" is out of range`)},
		{"worker queues above the maximum", []string{"-workers", "2000", "-worker-buffer", "10000"},
			"2000 workers × (-worker-buffer 10000 + 1) is more than the 1048576 requests"},
		{"completion buffer above the maximum", []string{"-engine", "channels", "-completion-buffer", "0,1048577"},
			"-completion-buffer must be at most 1048576 (dispatcher.MaxBuffer), got 1048577"},
		{"unknown engine", []string{"-engine", "pipes"}, `-engine: unknown engine "pipes" (want channels or rings)`},
		{"unknown engine in list", []string{"-engine", "channels,ring"}, `-engine: unknown engine "ring"`},
		{"empty engine", []string{"-engine", ""}, "-engine needs a value"},
		{"malformed engine list", []string{"-engine", "channels,"}, "malformed list"},
		{"duplicate engine", []string{"-engine", "rings,channels,Rings"}, "-engine: rings is listed twice"},
		{"two lists", []string{"-worker-buffer", "0,15", "-engine", "channels", "-completion-buffer", "0,8"},
			"a -worker-buffer list does not combine with a -completion-buffer list: one list at a time"},
		{"engine and worker buffer lists", []string{"-engine", "channels,rings", "-worker-buffer", "0,15"},
			"a -worker-buffer list does not combine with a -engine list"},
		{"engine and completion lists", []string{"-engine", "channels,rings", "-completion-buffer", "0,8"},
			"a -engine list does not combine with a -completion-buffer list"},
		{"compare with engine list", []string{"-compare", "p2c", "-engine", "channels,rings"},
			"-compare does not combine with a -engine list"},
		{"compare with completion list", []string{"-compare", "p2c", "-engine", "channels", "-completion-buffer", "0,8"},
			"-compare does not combine with a -completion-buffer list"},
		{"plot with engine list", []string{"-plot", "x.png", "-engine", "channels,rings"}, "-plot draws one run"},
		{"picks with engine", []string{"-picks", "10", "-engine", "channels"}, "-picks runs no workers: -engine cannot apply"},
		{"picks with completion buffer", []string{"-picks", "10", "-engine", "channels", "-completion-buffer", "0"},
			"-picks runs no workers: -engine cannot apply"},
		{"rounds with one engine", []string{"-engine", "channels", "-rounds", "3"},
			"-rounds needs a -worker-buffer, -engine or -completion-buffer list"},
		{"rounds with one completion buffer", []string{"-engine", "channels", "-completion-buffer", "0", "-rounds", "3"},
			"-rounds needs a -worker-buffer, -engine or -completion-buffer list"},
		{"workers contradict weights", []string{"-workers", "4", "-weights", "1,2"}, "contradicts"},
		{"nWorker contradicts workers", []string{"-nWorker", "4", "-workers", "8"}, "-nWorker 4 contradicts -workers 8"},
		{"nRequester contradicts requesters", []string{"-requesters", "8", "-nRequester", "2"},
			"-nRequester 2 contradicts -requesters 8"},
		{"zero nWorker", []string{"-nWorker", "0"}, "-nWorker must be positive, got 0"},
		{"zero nRequester", []string{"-nRequester", "0"}, "-nRequester must be positive, got 0"},
		{"nWorker contradicts weights", []string{"-nWorker", "4", "-weights", "1,2"}, "-nWorker 4 contradicts the 2 weights"},
		{"picks with nRequester", []string{"-picks", "10", "-nRequester", "3"}, "-picks runs no workers: -nRequester"},
		{"bad dist", []string{"-dist", "normal"}, "-dist must be const, uniform or exp"},
		{"panic rate above 1", []string{"-panic-rate", "1.5"}, "-panic-rate must be within [0, 1]"},
		{"negative cancel rate", []string{"-cancel-rate", "-0.1"}, "-cancel-rate must be within [0, 1]"},
		{"speeds count", []string{"-workers", "3", "-speeds", "1,2"}, "-speeds has 2 values for 3 workers"},
		{"zero speed", []string{"-workers", "2", "-speeds", "1,0"}, "want 0.01 to 1e6"},
		{"tiny speed", []string{"-workers", "2", "-speeds", "1e-9,1"}, "-speeds: worker 0 has speed 1e-09, want 0.01 to 1e6"},
		{"NaN speed", []string{"-workers", "2", "-speeds", "1,NaN"}, "-speeds: worker 1 has speed NaN"},
		{"huge speed", []string{"-workers", "1", "-speeds", "1e7"}, "want 0.01 to 1e6"},
		{"endless work", []string{"-work", "9223372036854775807ns"}, "-work must be at most 1s per request, got 2562047h47m16.854775807s"},
		{"work above a second", []string{"-work", "1001ms"}, "-work must be at most 1s per request"},
		{"single huge worker buffer", []string{"-worker-buffer", "9223372036854775807"},
			wordSize("-worker-buffer must be below 1048576 (dispatcher.MaxBuffer), got 9223372036854775807", `-worker-buffer: "9223372036854775807" is out of range`)},
		{"requests overflowing", []string{"-requests", "9223372036854775807"},
			wordSize("-requests must be at most 2^48 (281474976710656), got 9223372036854775807", "value out of range")},
		{"too many requesters", []string{"-requesters", "65537"}, "-requesters must be at most 65536, got 65537"},
		{"too many nRequester", []string{"-nRequester", "100000"}, "-nRequester must be at most 65536"},
		{"too many picks", []string{"-picks", "100000000"}, "-picks must be at most 10000000 (the trace is held whole), got 100000000"},
		{"all with json", []string{"-all", "-json"}, "-all is for the text tables: the -json output is always complete"},
		{"all with picks json", []string{"-picks", "10", "-all", "-json"}, "-all is for the text tables"},
		{"all with compare", []string{"-all", "-compare", "p2c,round-robin"}, "-all is for the per-worker and -picks tables"},
		{"all with a list", []string{"-all", "-worker-buffer", "0,15"}, "-all is for the per-worker and -picks tables"},
		{"plot in a missing directory", []string{"-plot", "/nonexistent/x.png"}, "-plot /nonexistent/x.png: directory /nonexistent does not exist"},
		{"plot in a file's directory", []string{"-plot", "/dev/null/x.png"}, "-plot /dev/null/x.png: /dev/null is not a directory"},
		{"plot on a directory", []string{"-plot", "/"}, "-plot /: not a regular file"},
		{"negative work", []string{"-work", "-1ms"}, "-work and -churn must be >= 0"},
		{"negative picks", []string{"-picks", "-1"}, "-picks must be >= 0"},
		{"rounds without list", []string{"-rounds", "3"}, "-rounds needs a -worker-buffer, -engine or -completion-buffer list"},
		{"rounds with one value", []string{"-worker-buffer", "15", "-rounds", "3"}, "-rounds needs a -worker-buffer,"},
		{"compare with list", []string{"-compare", "p2c", "-worker-buffer", "0,15"}, "-compare does not combine with a -worker-buffer list"},
		{"plot with list", []string{"-plot", "x.png", "-worker-buffer", "0,15"}, "-plot draws one run"},
		{"picks with worker buffer", []string{"-picks", "10", "-worker-buffer", "0,15"}, "-picks runs no workers: -worker-buffer"},
		{"duplicate compare", []string{"-compare", "p2c,p2c"}, "listed twice"},
		{"picks with run flags", []string{"-picks", "10", "-panic-rate", "0.1"}, "-picks runs no workers: -panic-rate cannot apply"},
		{"unknown schedule", []string{"-schedule", "lifo"}, `-schedule: unknown schedule "lifo" (want fifo, priority, deadline or fair)`},
		{"unknown schedule in list", []string{"-schedule", "fifo,edf"}, `-schedule: unknown schedule "edf"`},
		{"empty schedule", []string{"-schedule", ""}, "-schedule needs a value"},
		{"malformed schedule list", []string{"-schedule", "fifo,"}, "malformed list"},
		{"duplicate schedule", []string{"-schedule", "fair,fifo,FAIR"}, "-schedule: fair is listed twice"},
		{"schedule and engine lists", []string{"-schedule", "fifo,fair", "-engine", "channels,rings"},
			"a -engine list does not combine with a -schedule list"},
		{"compare with schedule list", []string{"-compare", "p2c", "-schedule", "fifo,fair"},
			"-compare does not combine with a -schedule list"},
		{"picks with schedule", []string{"-picks", "10", "-schedule", "fair"}, "-picks runs no workers: -schedule cannot apply"},
		{"unknown scenario", []string{"-scenario", "mixed"}, `-scenario: unknown scenario "mixed" (want tenants)`},
		{"duration without scenario", []string{"-duration", "1s"}, "-duration is for -scenario tenants"},
		{"zero duration", []string{"-scenario", "tenants", "-duration", "0s"}, "-duration must be above 0 and at most 1h0m0s, got 0s"},
		{"long duration", []string{"-scenario", "tenants", "-duration", "2h"}, "-duration must be above 0 and at most 1h0m0s"},
		{"tenants with requests", []string{"-scenario", "tenants", "-requests", "10"},
			"-scenario tenants has its own workload: -requests cannot apply to it"},
		{"tenants with plot", []string{"-scenario", "tenants", "-plot", "x.png"}, "-plot cannot apply"},
		{"tenants with an engine list", []string{"-scenario", "tenants", "-engine", "channels,rings"},
			"-scenario tenants measures a -schedule list, not a -engine list"},
		{"tenants rounds without list", []string{"-scenario", "tenants", "-rounds", "3"}, "-rounds needs a -worker-buffer"},
		{"undefined flag", []string{"-bogus"}, "flag provided but not defined: -bogus"},
		{"bad int", []string{"-workers", "many"}, "invalid value"},
		{"positional argument", []string{"extra"}, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runArgs(t, tt.args...)
			require.Equal(t, exitUsage, code)
			assert.Empty(t, out, "no report on bad input")
			assert.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
			assert.True(t, strings.HasPrefix(errs, "balancer: "), errs)
			assert.Contains(t, errs, tt.want)
			assert.NotContains(t, errs, "goroutine", "no panic trace")
		})
	}
}

func TestHelp(t *testing.T) {
	code, out, errs := runArgs(t, "-h")
	require.Equal(t, exitOK, code)
	assert.Empty(t, out)
	for _, f := range []string{"-requesters", "-nRequester", "-workers", "-nWorker", "-requests", "-strategy", "-weights", "-worker-buffer",
		"-engine", "-completion-buffer", "-work", "-dist", "-seed", "-picks", "-keys", "-json", "-speeds", "-panic-rate",
		"-cancel-rate", "-churn", "-v", "-compare", "-rounds", "-plot", "-all"} {
		assert.Regexp(t, `(?m)^  `+f+`\b`, errs, "help lists %s", f)
	}
}

func TestWorkerBufferList(t *testing.T) {
	for _, tt := range []struct {
		arg    []string
		want   []int
		single int
	}{
		{nil, []int{16}, 16},
		{[]string{"-worker-buffer", "63"}, []int{63}, 63},
		{[]string{"-worker-buffer", "0,15,63"}, []int{0, 15, 63}, 0},
		{[]string{"-worker-buffer", " 15 , 0 "}, []int{15, 0}, 15},
	} {
		c, err := parseConfig(tt.arg, nil)
		require.NoError(t, err, tt.arg)
		assert.Equal(t, tt.want, c.workerBuffers, tt.arg)
		assert.Equal(t, tt.single, c.workerBuffer, tt.arg)
		assert.Equal(t, tt.single, c.setupWith(nil).workerBuffer, tt.arg)
	}
}

func TestEngineFlag(t *testing.T) {
	for _, tt := range []struct {
		arg  []string
		want []dispatcher.Engine
	}{
		{nil, []dispatcher.Engine{dispatcher.DefaultEngine}},
		{[]string{"-engine", "channels"}, []dispatcher.Engine{dispatcher.Channels}},
		{[]string{"-engine", "Rings"}, []dispatcher.Engine{dispatcher.Rings}},
		{[]string{"-engine", " channels , rings "}, []dispatcher.Engine{dispatcher.Channels, dispatcher.Rings}},
		{[]string{"-engine", "rings,channels"}, []dispatcher.Engine{dispatcher.Rings, dispatcher.Channels}},
	} {
		c, err := parseConfig(tt.arg, nil)
		require.NoError(t, err, tt.arg)
		assert.Equal(t, tt.want, c.engines, tt.arg)
		assert.Equal(t, tt.want[0], c.setupWith(nil).engine, tt.arg)
	}
}

// The setup of a run carries the capacities it passes to the dispatcher:
// the completion buffer only on the channel engine, a slot per pending
// request (workers × (worker buffer + 1)) unless -completion-buffer says
// otherwise.
func TestSetupBuffers(t *testing.T) {
	for _, tt := range []struct {
		arg                []string
		completion, intake int
	}{
		{nil, 8 * 17, 8 * 17}, // the default engine: channels
		{[]string{"-engine", "rings", "-worker-buffer", "3"}, -1, 8 * 4},
		{[]string{"-engine", "channels"}, 8 * 17, 8 * 17},
		{[]string{"-engine", "channels", "-workers", "3", "-worker-buffer", "0"}, 3, 3},
		{[]string{"-engine", "channels", "-completion-buffer", "0"}, 0, 8 * 17},
		{[]string{"-engine", "channels", "-completion-buffer", "64,0"}, 64, 8 * 17},
	} {
		c, err := parseConfig(tt.arg, nil)
		require.NoError(t, err, tt.arg)
		s := c.setupWith(nil)
		assert.Equal(t, tt.completion, s.completion, tt.arg)
		assert.Equal(t, tt.intake, s.intake, tt.arg)
	}

	// In an engine list, the channels value gets the completion buffer and
	// the rings value none.
	c, err := parseConfig([]string{"-engine", "rings,channels", "-workers", "4"}, nil)
	require.NoError(t, err)
	ax := c.axis()
	require.NotNil(t, ax)
	assert.Equal(t, "engine", ax.param)
	assert.Equal(t, []any{"rings", "channels"}, ax.values)
	assert.Equal(t, -1, ax.setups[0].completion)
	assert.Equal(t, 4*17, ax.setups[1].completion)

	c, err = parseConfig([]string{"-engine", "channels", "-completion-buffer", "0,64"}, nil)
	require.NoError(t, err)
	ax = c.axis()
	require.NotNil(t, ax)
	assert.Equal(t, "completion_buffer", ax.param)
	assert.Equal(t, []any{0, 64}, ax.values)
	assert.Equal(t, []int{0, 64}, []int{ax.setups[0].completion, ax.setups[1].completion})
	for _, s := range ax.setups {
		assert.Equal(t, dispatcher.Channels, s.engine)
	}

	c, err = parseConfig(nil, nil)
	require.NoError(t, err)
	assert.Nil(t, c.axis(), "one value of everything: a single run")
}

// Pike's -nRequester and -nWorker are the same flags as -requesters and
// -workers: alone they set them; with the same value as the other
// spelling they are redundant, not an error.
func TestPikeAliases(t *testing.T) {
	for _, args := range [][]string{
		{"-nRequester", "5", "-nWorker", "3"},
		{"-nRequester", "5", "-requesters", "5", "-nWorker", "3", "-workers", "3"},
		{"-requesters", "5", "-nWorker", "3"},
	} {
		c, err := parseConfig(args, nil)
		require.NoError(t, err, args)
		assert.Equal(t, 5, c.requesters, args)
		assert.Equal(t, 3, c.workers, args)
	}
	c, err := parseConfig([]string{"-nWorker", "3", "-weights", "1,1,2"}, nil)
	require.NoError(t, err)
	assert.Equal(t, 3, c.workers)

	r := runReport(t, "-requests", "200", "-nRequester", "6", "-nWorker", "3", "-work", "20us")
	assert.Equal(t, 6, r.Requesters)
	assert.Equal(t, 3, r.Workers)
	assert.Len(t, r.PerWorker, 3)
	assert.Equal(t, 200, r.Completed)
}

func TestWeightsImplyWorkers(t *testing.T) {
	c, err := parseConfig([]string{"-weights", "100,100,66"}, nil)
	require.NoError(t, err)
	assert.Equal(t, 3, c.workers)
	assert.Equal(t, []int{100, 100, 66}, c.weights)
}

// wordSize is want64 where int is 64 bits and want32 where it is 32: a
// number past a 32-bit int is refused when it is parsed, before any bound.
func wordSize(want64, want32 string) string {
	if strconv.IntSize == 32 {
		return want32
	}
	return want64
}
