package main

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Requesters that run out of requests end drive with no error and no
// cancellation of the work.
func TestDriveRunsOut(t *testing.T) {
	var calls atomic.Int64
	cancelled := false
	err := drive(context.Background(), 4, func() { cancelled = true }, func() (bool, error) {
		return calls.Add(1) <= 100, nil
	})
	require.NoError(t, err)
	assert.False(t, cancelled)
	assert.Equal(t, int64(100+4), calls.Load(), "each requester stops at its first empty take")
}

// The first requester's error stops every requester's intake and is
// drive's error. The supply of requests is endless here, so drive returns
// only if the others stopped.
func TestDriveFirstErrorStopsAll(t *testing.T) {
	boom := errors.New("boom")
	var calls atomic.Int64
	err := drive(context.Background(), 4, func() {}, func() (bool, error) {
		if calls.Add(1) == 50 {
			return false, boom
		}
		time.Sleep(100 * time.Microsecond)
		return true, nil
	})
	require.ErrorIs(t, err, boom)
}

// An interrupt stops intake; takes still in flight get grace, then the
// work is cancelled and drive returns nil: the run reports what it did.
func TestDriveInterruptGraceThenCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	work, cancelWork := context.WithCancel(context.Background())
	defer cancelWork()
	var started atomic.Int64
	begun := make(chan struct{})
	var stopped time.Time
	go func() { <-begun; stopped = time.Now(); cancel() }()
	err := drive(ctx, 2, cancelWork, func() (bool, error) {
		if started.Add(1) == 2 {
			close(begun)
		}
		<-work.Done() // a task that only ends when cancelled
		return true, nil
	})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(stopped), grace)
	assert.Equal(t, int64(2), started.Load(), "no take after the interrupt")
	assert.Error(t, work.Err())
}
