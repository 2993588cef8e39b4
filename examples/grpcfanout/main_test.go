package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The tests start gRPC servers and clients; every goroutine they start must
// be gone when they return.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRunInOrder: the answers, from several backends, fold to the local
// digest: the stream kept input order end to end.
func TestRunInOrder(t *testing.T) {
	c := Config{Items: 500, Size: 64, Backends: 3, Slow: time.Millisecond, Workers: 8, Policy: "least-pending"}
	rep, err := Run(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, Serial(c.Items, c.Size), rep.Digest)
	total := 0
	for _, n := range rep.Served {
		total += n
	}
	require.Equal(t, c.Items, total)
	require.Greater(t, len(rep.Served), 1, "one backend served everything: %v", rep.Served)
}

// TestRunCancelled: a cancelled context ends the stream with its error,
// and everything Run started is stopped (goleak).
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, Config{Items: 100, Size: 64, Backends: 2, Workers: 4, Policy: "round-robin"})
	require.ErrorIs(t, err, context.Canceled)
}

func TestRunRejectsBadConfig(t *testing.T) {
	_, err := Run(context.Background(), Config{Items: 1, Size: 0, Backends: 1, Workers: 1, Policy: "round-robin"})
	require.Error(t, err)
	require.Error(t, run(context.Background(), Config{Items: 1, Size: 1, Backends: 1, Workers: 1, Policy: "no-such-policy"}))
}

func TestRunPrints(t *testing.T) {
	require.NoError(t, run(context.Background(), Config{Items: 200, Size: 32, Backends: 2, Workers: 4, Policy: "round-robin"}))
}
