package dispatcher_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// WithIntakeBuffer documents the default intake as workers × (worker
// buffer + 1), and the default worker buffer is 63: one worker whose task
// blocks should admit 64 requests at the worker (the limit tasks that are
// not short keep) plus 64 in the intake, 128 in all. Since cd21b53 the
// rings default intake is workers × 256 (New sizes it from depth, not
// base): 320 are admitted, for tasks that never deepen the queue.
func TestReviewDefaultIntakeFollowsWorkerBuffer(t *testing.T) {
	d := newDispatcher(t, dispatcher.WithWorkers(1))
	ctx := context.Background()
	gate := make(chan struct{})
	open := sync.OnceFunc(func() { close(gate) })
	defer open()
	task := func(context.Context) (int, error) { <-gate; return 1, nil }
	var fs []*dispatcher.Future[int]
	for busy := 0; busy < 50; {
		f, err := d.TrySubmit(ctx, task)
		if err != nil {
			require.True(t, errors.Is(err, dispatcher.ErrBusy), err)
			busy++
			time.Sleep(time.Millisecond)
			continue
		}
		busy = 0
		fs = append(fs, f)
		require.Less(t, len(fs), 10000)
	}
	accepted := len(fs)
	open()
	for _, f := range fs {
		_, err := f.Wait(ctx)
		require.NoError(t, err)
		f.Release()
	}
	require.LessOrEqual(t, accepted, 128, "admitted with a blocked worker: 64 at the worker + default intake workers×(63+1)")
}
