package dispatcher_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// recorder is a task factory whose tasks note their number as they run.
type recorder struct {
	mu  sync.Mutex
	ran []int
}

func (r *recorder) task(k int, gate <-chan struct{}) func(context.Context) (int, error) {
	return func(context.Context) (int, error) {
		if gate != nil {
			<-gate
		}
		r.mu.Lock()
		r.ran = append(r.ran, k)
		r.mu.Unlock()
		return k, nil
	}
}

func (r *recorder) order() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.ran...)
}

// workersUsed counts the workers that completed a request.
func workersUsed(d *dispatcher.Dispatcher) int {
	n := 0
	for _, w := range d.Stats().Workers {
		if w.Completed > 0 {
			n++
		}
	}
	return n
}

// seq returns 0..n-1.
func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// Keyed's promise under consistent-hash: 200 requests with one key,
// submitted by one goroutine without waiting, the first holding its worker
// until all are in, reach one worker and run in submission order (the
// issue's bounded-hash run spread them 12/63/63/62 and ran request 0
// after request 15).
func TestKeyedConsistentHashKeepsOrder(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		synctest.Test(t, func(t *testing.T) {
			d := bubbleDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(4),
				dispatcher.WithStrategyName("consistent-hash"))
			var rec recorder
			gate := make(chan struct{})
			fs := make([]*dispatcher.Future[int], 200)
			for k := range fs {
				g := gate
				if k > 0 {
					g = nil
				}
				f, err := dispatcher.Submit(context.Background(), d.Key(42), rec.task(k, g))
				require.NoError(t, err)
				fs[k] = f
			}
			// Every goroutine of the bubble is blocked, the first task on
			// its gate: whatever could overtake it has had its chance.
			synctest.Wait()
			assert.Empty(t, rec.order(), "a later request ran before the first")
			close(gate)
			for k, f := range fs {
				v, err := f.Wait(context.Background())
				require.NoError(t, err)
				require.Equal(t, k, v)
			}
			assert.Equal(t, seq(200), rec.order())
			assert.Equal(t, 1, workersUsed(d), "one key, one worker")
			closeBubble(t, d)
		})
	})
}

// What Keyed says of bounded-hash: while the key's worker is at its bound
// the next request goes to another worker and may run first, so a key
// submitted without waiting spreads over workers out of order.
func TestKeyedBoundedHashSpreadsAndMayOvertake(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(4),
			dispatcher.WithStrategyName("bounded-hash"))
		var rec recorder
		gate := make(chan struct{})
		first, err := dispatcher.Submit(context.Background(), d.Key(42), rec.task(0, gate))
		require.NoError(t, err)
		// The first holds its worker, at its bound ⌈1.25·2/4⌉ = 1: the
		// second goes elsewhere and is answered while the first waits.
		second, err := dispatcher.Submit(context.Background(), d.Key(42), rec.task(1, nil))
		require.NoError(t, err)
		v, err := waitFuture(t, second, 10*time.Second)
		require.NoError(t, err)
		require.Equal(t, 1, v)
		select {
		case <-first.Done():
			t.Fatal("the first request finished before its gate opened")
		default:
		}
		fs := []*dispatcher.Future[int]{first, second}
		for k := 2; k < 200; k++ {
			f, err := dispatcher.Submit(context.Background(), d.Key(42), rec.task(k, nil))
			require.NoError(t, err)
			fs = append(fs, f)
		}
		close(gate)
		for k, f := range fs {
			v, err := waitFuture(t, f, 10*time.Second)
			require.NoError(t, err)
			require.Equal(t, k, v)
		}
		assert.Equal(t, 1, rec.order()[0], "the second request ran first")
		assert.Greater(t, workersUsed(d), 1, "a hot key spreads")
	})
}

// What Keyed promises bounded-hash: a requester that waits for each answer
// before the next sees its requests with one key run in order, wherever
// they go.
func TestKeyedBoundedHashOrderWhenWaiting(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(4),
			dispatcher.WithStrategyName("bounded-hash"))
		var rec recorder
		within(t, 20*time.Second, "200 waited requests", func() {
			for k := range 200 {
				if k%2 == 0 {
					v, err := dispatcher.Do(context.Background(), d.Key(42), rec.task(k, nil))
					assert.NoError(t, err)
					assert.Equal(t, k, v)
					continue
				}
				f, err := dispatcher.Submit(context.Background(), d.Key(42), rec.task(k, nil))
				if !assert.NoError(t, err) {
					return
				}
				v, err := f.Wait(context.Background())
				assert.NoError(t, err)
				assert.Equal(t, k, v)
			}
		})
		assert.Equal(t, seq(200), rec.order())
	})
}
