package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParallelEqualsSerial(t *testing.T) {
	buf := make([]byte, 64*100)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	got, err := Parallel(context.Background(), buf, 64, 100, 3)
	require.NoError(t, err)
	require.Equal(t, Serial(buf, 64, 100), got)
}

// TestParallelCancelled: a cancelled context ends the fan-out with the
// context's error instead of a wrong digest.
func TestParallelCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Parallel(ctx, make([]byte, 64*100), 64, 100, 3)
	require.ErrorIs(t, err, context.Canceled)
}

func TestRunRejectsBadSizes(t *testing.T) {
	require.Error(t, run(context.Background(), 0, 10, 2))
}

func TestStreamEqualsSerial(t *testing.T) {
	for _, window := range []int{0, 1, 7} {
		got, err := Stream(context.Background(), 500, 100, 3, window)
		require.NoError(t, err)
		require.Equal(t, StreamSerial(500, 100), got, "window %d", window)
	}
}

// TestStreamCancelled: a cancelled context ends the stream with its
// error.
func TestStreamCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Stream(ctx, 1000, 100, 2, 0)
	require.ErrorIs(t, err, context.Canceled)
}

func TestRunStreamRejectsBadSizes(t *testing.T) {
	require.Error(t, runStream(context.Background(), 0, 10, 2, 0))
	require.Error(t, runStream(context.Background(), 10, 10, 2, -1))
}
