package dispatcher_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestTrySubmitZeroIntakeIdleWorkers: with a zero intake buffer,
// TrySubmit must accept a request whenever nothing waits and a worker has
// room (WithIntakeBuffer's doc: "0 accepts a request only when nothing
// waits and a worker has room"; TrySubmit's: ErrBusy "when there is no
// room for the request right now"). Here four workers are idle and one
// requester submits one request at a time, waiting for each answer, so
// there is always room for the next. Every TrySubmit must succeed.
func TestTrySubmitZeroIntakeIdleWorkers(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(4),
			dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(0))
		const n = 200
		busy := 0
		within(t, 20*time.Second, "TrySubmit loop", func() {
			for i := range n {
				f, err := dispatcher.TrySubmit(context.Background(), d, ok(i))
				if errors.Is(err, dispatcher.ErrBusy) {
					busy++
					continue
				}
				if !assertNoErr(t, err) {
					return
				}
				<-f.Done()
			}
		})
		t.Logf("%v: %d of %d TrySubmit on idle workers returned ErrBusy", eng, busy, n)
		require.Zero(t, busy, "TrySubmit refused with ErrBusy while every worker was idle")
	})
}

// TestTrySubmitZeroIntakeFirstCall: the first TrySubmit right after
// New, on idle workers, at a zero intake buffer.
func TestTrySubmitZeroIntakeFirstCall(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		busy := 0
		for range 20 {
			d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithIntakeBuffer(0))
			f, err := dispatcher.TrySubmit(context.Background(), d, ok(1))
			if errors.Is(err, dispatcher.ErrBusy) {
				busy++
				continue
			}
			require.NoError(t, err)
			_, err = waitFuture(t, f, 5*time.Second)
			require.NoError(t, err)
		}
		require.Zero(t, busy, "first TrySubmit on a new, idle dispatcher returned ErrBusy")
	})
}

func assertNoErr(t *testing.T, err error) bool {
	if err != nil {
		t.Errorf("unexpected error: %v", err)
		return false
	}
	return true
}
