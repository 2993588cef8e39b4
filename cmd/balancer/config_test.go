package main

import (
	"strings"
	"testing"

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
		{"negative weight", []string{"-weights", "1,-1,2"}, "negative weight -1"},
		{"all-zero weights", []string{"-weights", "0,0"}, "at least one weight must be positive"},
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
		{"completion buffer list", []string{"-completion-buffer", "0,8"},
			"-completion-buffer 0,8: a list would compare identical runs: the dispatcher has no completion channel"},
		{"completion list with rounds", []string{"-completion-buffer", "0,8", "-rounds", "3"}, "measure a -worker-buffer list instead"},
		{"both lists", []string{"-worker-buffer", "0,15", "-completion-buffer", "0,8"}, "measure a -worker-buffer list instead"},
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
		{"zero speed", []string{"-workers", "2", "-speeds", "1,0"}, "want a positive number"},
		{"negative work", []string{"-work", "-1ms"}, "-work and -churn must be >= 0"},
		{"negative picks", []string{"-picks", "-1"}, "-picks must be >= 0"},
		{"rounds without list", []string{"-rounds", "3"}, "-rounds needs a -worker-buffer list"},
		{"rounds with one value", []string{"-worker-buffer", "15", "-rounds", "3"}, "-rounds needs a -worker-buffer list"},
		{"compare with list", []string{"-compare", "p2c", "-worker-buffer", "0,15"}, "-compare does not combine with a -worker-buffer list"},
		{"plot with list", []string{"-plot", "x.png", "-worker-buffer", "0,15"}, "-plot draws one run"},
		{"picks with worker buffer", []string{"-picks", "10", "-worker-buffer", "0,15"}, "-picks runs no workers: -worker-buffer"},
		{"duplicate compare", []string{"-compare", "p2c,p2c"}, "listed twice"},
		{"picks with run flags", []string{"-picks", "10", "-panic-rate", "0.1"}, "-picks runs no workers: -panic-rate has no effect"},
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
		"-completion-buffer", "-work", "-dist", "-seed", "-picks", "-keys", "-json", "-speeds", "-panic-rate",
		"-cancel-rate", "-churn", "-v", "-compare", "-rounds", "-plot"} {
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
		assert.Equal(t, -1, c.completion, "not given")
	}
	// A single -completion-buffer is still accepted (and passed on).
	c, err := parseConfig([]string{"-completion-buffer", "0"}, nil)
	require.NoError(t, err)
	assert.Equal(t, 0, c.completion)
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
