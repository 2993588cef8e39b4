package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSWRRSharesFollowWeights(t *testing.T) {
	got, err := Shares(context.Background(), "swrr", []int{2, 1, 1}, 400)
	require.NoError(t, err)
	// swrr is exact per cycle of 4 picks, and 400 is 100 cycles.
	require.Equal(t, []int64{200, 100, 100}, got)
}
