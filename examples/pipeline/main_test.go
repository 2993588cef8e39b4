package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var small = Config{Parsers: 2, Counters: 3}

func TestPipelineEqualsSerial(t *testing.T) {
	recs := Generate(300, 5000, -1)
	want, err := Serial(recs)
	require.NoError(t, err)
	rep, err := Run(context.Background(), recs, small)
	require.NoError(t, err)
	require.Equal(t, want, rep.Counts)
	require.Equal(t, len(recs), rep.Parsed)
	require.Equal(t, len(recs), rep.Counted)
}

// TestPipelineStage1Failure: a malformed record stops both stages: the
// error names it, and most records are never counted.
func TestPipelineStage1Failure(t *testing.T) {
	recs := Generate(2000, 20000, 20)
	rep, err := Run(context.Background(), recs, small)
	require.ErrorIs(t, err, ErrBadRecord)
	require.ErrorContains(t, err, "record 20:")
	require.Less(t, rep.Counted, len(recs)/2, "stage 2 was cancelled too")
	require.Nil(t, rep.Counts)
}

// TestPipelineStage2Failure: a value stage 2 refuses stops stage 1 too.
func TestPipelineStage2Failure(t *testing.T) {
	recs := Generate(2000, 20000, -1)
	recs[10] = fmt.Sprintf("10 %d", MaxValue+1)
	rep, err := Run(context.Background(), recs, small)
	require.ErrorIs(t, err, ErrTooLarge)
	require.Less(t, rep.Parsed, len(recs)/2, "stage 1 was cancelled too")
}

// TestPipelineParentCancelled: the caller's cancellation is the error.
func TestPipelineParentCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, Generate(100, 1000, -1), small)
	require.ErrorIs(t, err, context.Canceled)
}

func TestGenerateBad(t *testing.T) {
	_, err := Serial(Generate(10, 100, 3))
	require.ErrorIs(t, err, ErrBadRecord)
}
