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
		{"negative completion buffer", []string{"-completion-buffer", "0,-8"}, "-completion-buffer must be >= 0"},
		{"malformed completion list", []string{"-completion-buffer", "0,"}, "malformed list"},
		{"workers contradict weights", []string{"-workers", "4", "-weights", "1,2"}, "contradicts"},
		{"bad dist", []string{"-dist", "normal"}, "-dist must be const, uniform or exp"},
		{"panic rate above 1", []string{"-panic-rate", "1.5"}, "-panic-rate must be within [0, 1]"},
		{"negative cancel rate", []string{"-cancel-rate", "-0.1"}, "-cancel-rate must be within [0, 1]"},
		{"speeds count", []string{"-workers", "3", "-speeds", "1,2"}, "-speeds has 2 values for 3 workers"},
		{"zero speed", []string{"-workers", "2", "-speeds", "1,0"}, "want a positive number"},
		{"negative work", []string{"-work", "-1ms"}, "-work and -churn must be >= 0"},
		{"negative picks", []string{"-picks", "-1"}, "-picks must be >= 0"},
		{"rounds without list", []string{"-rounds", "3"}, "-rounds needs a -completion-buffer list"},
		{"compare with rounds", []string{"-compare", "p2c", "-completion-buffer", "0,8"}, "does not combine"},
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
	for _, f := range []string{"-requesters", "-workers", "-requests", "-strategy", "-weights", "-worker-buffer",
		"-completion-buffer", "-work", "-dist", "-seed", "-picks", "-keys", "-json", "-speeds", "-panic-rate",
		"-cancel-rate", "-churn", "-v", "-compare", "-rounds", "-plot"} {
		assert.Regexp(t, `(?m)^  `+f+`\b`, errs, "help lists %s", f)
	}
}

func TestWeightsImplyWorkers(t *testing.T) {
	c, err := parseConfig([]string{"-weights", "100,100,66"}, nil)
	require.NoError(t, err)
	assert.Equal(t, 3, c.workers)
	assert.Equal(t, []int{100, 100, 66}, c.weights)
}
