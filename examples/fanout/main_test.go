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

func TestRunRejectsBadSizes(t *testing.T) {
	require.Error(t, run(context.Background(), 0, 10, 2))
}
