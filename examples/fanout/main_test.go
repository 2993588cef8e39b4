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
