package dispatcher_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestGoRacesClose: Go (and TrySubmit) racing Close, at a zero and a
// positive intake, unbuffered and buffered completion channels, worker
// buffer 0 and 2. A Go that returned nil must run exactly once, and before
// a Close without deadline returns ("Close waits for fn"); a refused one
// must never run; nothing may run after Done.
func TestGoRacesClose(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for _, cc := range completionAxis(eng, 2) {
			for _, intake := range []int{0, 4} {
				for _, buf := range []int{0, 2} {
					t.Run(fmt.Sprintf("%s/intake=%d/buffer=%d", cc.name, intake, buf), func(t *testing.T) {
						for round := range 6 {
							goRaceRound(t, round, append([]dispatcher.Option{dispatcher.WithEngine(eng), dispatcher.WithWorkers(2),
								dispatcher.WithIntakeBuffer(intake), dispatcher.WithWorkerBuffer(buf)}, cc.opts...))
						}
					})
				}
			}
		}
	})
}

func goRaceRound(t *testing.T, round int, opts []dispatcher.Option) {
	d, err := dispatcher.New(opts...)
	require.NoError(t, err)
	var accepted, ran, refusedRan, afterDone atomic.Int64
	var done atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for {
				var mine atomic.Bool // set once this submission is accepted
				refused := make(chan struct{})
				task := func(context.Context) (int, error) {
					if done.Load() {
						afterDone.Add(1)
					}
					select {
					case <-refused:
						refusedRan.Add(1)
					default:
					}
					ran.Add(1)
					return 0, nil
				}
				var err error
				if g%2 == 0 {
					err = d.Go(context.Background(), func(ctx context.Context) error { _, err := task(ctx); return err })
				} else {
					_, err = dispatcher.TrySubmit(context.Background(), d, task)
				}
				if err == nil {
					mine.Store(true)
					accepted.Add(1)
					continue
				}
				close(refused)
				if errors.Is(err, dispatcher.ErrBusy) {
					continue
				}
				assert.ErrorIs(t, err, dispatcher.ErrClosed)
				select {
				case <-stop:
					return
				default:
				}
			}
		})
	}
	time.Sleep(time.Duration(round%3) * time.Millisecond)
	ctx := context.Background()
	deadline := round%2 == 1
	var cancel context.CancelFunc = func() {}
	if deadline {
		ctx, cancel = context.WithTimeout(ctx, 100*time.Microsecond)
	}
	var cerr error
	within(t, 10*time.Second, "Close", func() { cerr = d.Close(ctx) })
	cancel()
	if !deadline {
		require.NoError(t, cerr)
	}
	close(stop)
	within(t, 10*time.Second, "submitters", wg.Wait)
	within(t, 10*time.Second, "Done", func() { <-d.Done() })
	if !deadline {
		// Close returned nil: every accepted task has run.
		require.Equal(t, accepted.Load(), ran.Load(), "Close returned before every accepted Go/TrySubmit ran")
	} else {
		require.LessOrEqual(t, ran.Load(), accepted.Load())
	}
	done.Store(true)
	time.Sleep(time.Millisecond)
	require.Zero(t, refusedRan.Load(), "a refused submission ran")
	require.Zero(t, afterDone.Load(), "a task ran after Done")
	s := d.Stats()
	require.Equal(t, s.Dispatched, s.Completed)
	require.Zero(t, s.Pending)
}
