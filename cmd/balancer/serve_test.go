package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/balancerview"
)

// lockedBuffer is written by run while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// -serve runs until its context ends, serving the live view meanwhile;
// then it stops cleanly, with exit status 0 and a line of totals.
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errs lockedBuffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"-serve", "127.0.0.1:0", "-requesters", "4", "-workers", "2", "-work", "20us"}, &out, &errs)
	}()
	urlRe := regexp.MustCompile(`live view at (http://127\.0\.0\.1:\d+/debug/balancer/) \(Ctrl-C stops\)`)
	var url string
	require.Eventually(t, func() bool {
		m := urlRe.FindStringSubmatch(out.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	}, 10*time.Second, 10*time.Millisecond, "no URL printed: %s %s", out.String(), errs.String())

	// The page, then samples that show the run going on.
	resp, err := http.Get(url)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	var first int64
	require.Eventually(t, func() bool {
		resp, err := http.Get(url + "api/least-pending")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var s balancerview.Sample
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&s) != nil {
			return false
		}
		if first == 0 {
			first = s.Stats.Completed
		}
		return first > 0 && s.Stats.Completed > first && len(s.Workers) == 2
	}, 10*time.Second, 50*time.Millisecond)

	cancel() // Ctrl-C
	select {
	case c := <-code:
		require.Equal(t, exitOK, c, errs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("-serve did not stop after its context ended")
	}
	assert.Regexp(t, `balancer: stopped after \S+: \d+ requests answered, \d+ completed, 0 errors`, out.String())
	_, err = http.Get(url)
	assert.Error(t, err, "the server is down")
}

func TestServeFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-serve", "127.0.0.1:0", "-requests", "10"},
		{"-serve", "127.0.0.1:0", "-json"},
		{"-serve", "127.0.0.1:0", "-engine", "channels,rings"},
		{"-serve", "127.0.0.1:0", "-picks", "5"},
	} {
		code, _, errs := runArgs(t, args...)
		assert.Equal(t, exitUsage, code, args)
		assert.Contains(t, errs, "-serve", args)
	}
	code, _, errs := runArgs(t, "-serve", "127.0.0.1:-1")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errs, "-serve: listen")
}
