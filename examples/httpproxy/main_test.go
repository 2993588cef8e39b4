package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// run starts servers and clients; they must all be gone when it returns.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, config{
		duration:    5 * time.Second,
		requests:    200,
		concurrency: 8,
		latencies:   []time.Duration{time.Millisecond, 5 * time.Millisecond},
		strategies:  []string{"round-robin", "least-pending"},
	}, &out)
	require.NoError(t, err)
	t.Log("\n" + out.String())
	require.Contains(t, out.String(), "round-robin")
	require.Contains(t, out.String(), "least-pending")
	require.Regexp(t, `total\s+200\s+200`, out.String())
	require.Regexp(t, `failed\s+0\s+0`, out.String())
}

func TestRunRejectsUnknownStrategy(t *testing.T) {
	err := run(context.Background(), config{
		duration: time.Second, concurrency: 1,
		latencies: []time.Duration{0}, strategies: []string{"nope"},
	}, &bytes.Buffer{})
	require.Error(t, err)
}
