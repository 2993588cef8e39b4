package dispatcher_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// checkQuiescent checks Stats of a dispatcher with nothing in flight.
func checkQuiescent(t *testing.T, s dispatcher.Stats, answered int64) {
	t.Helper()
	var pend int
	comp := s.RetiredCompleted
	for _, w := range s.Workers {
		pend += w.Pending
		comp += w.Completed
		assert.GreaterOrEqual(t, w.Pending, 0, "worker %d pending", w.Index)
	}
	assert.Equal(t, s.Pending, pend, "Pending != sum of worker Pending")
	assert.Equal(t, s.Completed, comp, "Completed != RetiredCompleted + sum of worker Completed")
	assert.Equal(t, s.Dispatched, s.Completed, "Dispatched != Completed after quiescence")
	assert.Zero(t, s.Pending, "Pending after quiescence")
	assert.False(t, s.Held, "Held after quiescence")
	assert.Equal(t, answered, s.Completed, "Completed != answers")
}

// TestChurnBeyondCompletionBuffer: AddWorker grows the workers far
// beyond the completion channel's capacity (the default is sized for the
// initial workers; 0 is unbuffered) while RemoveWorker and SetWeight churn
// under load from Do, Submit and Go. Every request must be answered once,
// nothing may hang, and Stats must balance at the end.
func TestChurnBeyondCompletionBuffer(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		cells := completionAxis(eng, 2)
		if eng == dispatcher.Channels {
			cells = append(cells, completionCell{"default", nil})
		}
		for _, cc := range cells {
			for _, buf := range []int{0, 3} {
				t.Run(fmt.Sprintf("%s/buffer=%d", cc.name, buf), func(t *testing.T) {
					churnCell(t, append([]dispatcher.Option{dispatcher.WithEngine(eng), dispatcher.WithWorkers(2),
						dispatcher.WithWorkerBuffer(buf)}, cc.opts...)...)
				})
			}
		}
	})
}

func churnCell(t *testing.T, opts ...dispatcher.Option) {
	d := newDispatcher(t, opts...)
	const requesters, per = 16, 150
	var answered, goRan, goSent atomic.Int64
	var ids sync.Map
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Go(func() {
		live := []int{0, 1}
		rng := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				return
			default:
			}
			switch op := rng.IntN(3); {
			case op == 0 && len(live) < 24:
				i, err := d.AddWorker(1 + rng.IntN(3))
				if assert.NoError(t, err, "AddWorker") {
					live = append(live, i)
				}
			case op == 1 && len(live) > 2:
				k := rng.IntN(len(live))
				err := d.RemoveWorker(live[k])
				if err == nil {
					live = append(live[:k], live[k+1:]...)
				} else {
					assert.ErrorIs(t, err, dispatcher.ErrBadOption, "RemoveWorker")
				}
			default:
				err := d.SetWeight(live[rng.IntN(len(live))], rng.IntN(4))
				if err != nil {
					assert.ErrorIs(t, err, dispatcher.ErrBadOption, "SetWeight")
				}
			}
			time.Sleep(50 * time.Microsecond)
		}
	})
	within(t, 60*time.Second, "requests under churn", func() {
		var wg sync.WaitGroup
		for g := range requesters {
			wg.Go(func() {
				for k := range per {
					id := g*per + k
					task := func(context.Context) (int, error) {
						if _, dup := ids.LoadOrStore(id, true); dup {
							t.Errorf("request %d ran twice", id)
						}
						if id%7 == 0 {
							time.Sleep(20 * time.Microsecond)
						}
						return id, nil
					}
					switch k % 3 {
					case 0:
						v, err := dispatcher.Do(context.Background(), d, task)
						if assert.NoError(t, err) && assert.Equal(t, id, v) {
							answered.Add(1)
						}
					case 1:
						f, err := dispatcher.Submit(context.Background(), d, task)
						if assert.NoError(t, err) {
							v, err := f.Wait(context.Background())
							if assert.NoError(t, err) && assert.Equal(t, id, v) {
								answered.Add(1)
							}
						}
					default:
						goSent.Add(1)
						err := d.Go(context.Background(), func(ctx context.Context) error {
							v, err := task(ctx)
							goRan.Add(1)
							_ = v
							return err
						})
						assert.NoError(t, err)
					}
				}
			})
		}
		wg.Wait()
	})
	close(stop)
	churn.Wait()
	closeWithin(t, d, 20*time.Second)
	require.Equal(t, goSent.Load(), goRan.Load(), "every accepted Go ran once before Close returned")
	s := d.Stats()
	checkQuiescent(t, s, answered.Load()+goRan.Load())
	t.Logf("workers %d, dispatched %d, stalls %d", len(s.Workers), s.Dispatched, s.Stalls)
}

// TestCloseDeadlineWithRemovedWorker: a removed worker still running
// a long task with requests queued behind it. Close with a short deadline
// returns the context's error, answers every request that had not started
// with an error matching ErrClosed and the deadline, and Done closes only
// once the running tasks end (and then promptly).
func TestCloseDeadlineWithRemovedWorker(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(3), dispatcher.WithWorkerBuffer(4))
		require.NoError(t, err)
		release := make(chan struct{})
		var started atomic.Int64
		task := func(context.Context) (int, error) { started.Add(1); <-release; return 7, nil }
		var fs []*dispatcher.Future[int]
		for range 12 {
			f, err := dispatcher.Submit(context.Background(), d, task)
			require.NoError(t, err)
			fs = append(fs, f)
		}
		require.Eventually(t, func() bool { return started.Load() == 3 }, 5*time.Second, time.Millisecond)
		require.NoError(t, d.RemoveWorker(0))
		require.NoError(t, d.RemoveWorker(1))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		within(t, 5*time.Second, "Close with deadline", func() {
			assert.ErrorIs(t, d.Close(ctx), context.DeadlineExceeded)
		})
		// Every request that had not started is answered now.
		abandoned := 0
		within(t, 5*time.Second, "abandoned answers", func() {
			for _, f := range fs {
				select {
				case <-f.Done():
					_, err := f.Wait(context.Background())
					if assert.ErrorIs(t, err, dispatcher.ErrClosed) {
						assert.ErrorIs(t, err, context.DeadlineExceeded)
					}
					abandoned++
				case <-time.After(200 * time.Millisecond):
				}
			}
		})
		assert.Equal(t, 9, abandoned, "requests not running answered at Close's deadline")
		select {
		case <-d.Done():
			t.Fatal("Done closed while three tasks still run")
		default:
		}
		_, err = d.AddWorker(1)
		assert.ErrorIs(t, err, dispatcher.ErrClosed, "AddWorker after Close began")
		close(release)
		within(t, 5*time.Second, "Done after release", func() { <-d.Done() })
		assert.Equal(t, int64(3), started.Load(), "an abandoned request ran")
		running := 0
		for _, f := range fs {
			v, err := f.Wait(context.Background())
			if err == nil {
				assert.Equal(t, 7, v)
				running++
			} else {
				assert.True(t, errors.Is(err, dispatcher.ErrClosed))
			}
		}
		assert.Equal(t, 3, running)
		s := d.Stats()
		checkQuiescent(t, s, s.Completed) // consistency only: abandoned count as completed
		assert.NoError(t, d.Close(context.Background()), "Close after stop")
	})
}
