package dispatcher_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestFaultChurnZeroBuffers: the tightest channel-engine cell (intake
// 0, worker buffer 0, completion 0) and rings at intake 0 / buffer 0, with
// tasks that panic or Goexit, cancelled requesters, and AddWorker /
// RemoveWorker / SetWeight churn; then Close with a short deadline. Every
// accepted request is answered exactly once, no hang, Stats balance.
func TestFaultChurnZeroBuffers(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for _, cc := range completionAxis(eng, 1) {
			t.Run(fmt.Sprintf("completion=%s", cc.name), func(t *testing.T) {
				for round := range 3 {
					faultChurnRound(t, round, append([]dispatcher.Option{dispatcher.WithEngine(eng), dispatcher.WithWorkers(2),
						dispatcher.WithIntakeBuffer(0), dispatcher.WithWorkerBuffer(0)}, cc.opts...))
				}
			})
		}
	})
}

func faultChurnRound(t *testing.T, round int, opts []dispatcher.Option) {
	d, err := dispatcher.New(opts...)
	require.NoError(t, err)
	const requesters, per = 12, 120
	var accepted, answered atomic.Int64
	var ran sync.Map
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Go(func() {
		live := []int{0, 1}
		rng := rand.New(rand.NewPCG(uint64(round), 7))
		for {
			select {
			case <-stop:
				return
			default:
			}
			switch op := rng.IntN(3); {
			case op == 0 && len(live) < 8:
				if i, err := d.AddWorker(1); err == nil {
					live = append(live, i)
				}
			case op == 1 && len(live) > 1:
				k := rng.IntN(len(live))
				if d.RemoveWorker(live[k]) == nil {
					live = append(live[:k], live[k+1:]...)
				}
			default:
				_ = d.SetWeight(live[rng.IntN(len(live))], rng.IntN(3))
			}
			time.Sleep(100 * time.Microsecond)
		}
	})
	within(t, 60*time.Second, "faulty requests under churn", func() {
		var wg sync.WaitGroup
		for g := range requesters {
			wg.Go(func() {
				for k := range per {
					id := g*per + k
					task := func(context.Context) (int, error) {
						if _, dup := ran.LoadOrStore(id, true); dup {
							t.Errorf("request %d ran twice", id)
						}
						switch id % 9 {
						case 1:
							panic(id)
						case 2:
							runtime.Goexit()
						}
						return id, nil
					}
					ctx, cancel := context.WithCancel(context.Background())
					if id%9 == 3 {
						go func() { time.Sleep(time.Duration(id%5) * 20 * time.Microsecond); cancel() }()
					}
					var v int
					var err error
					if k%2 == 0 {
						v, err = dispatcher.Do(ctx, d, task)
						if err == nil || ctx.Err() == nil {
							accepted.Add(1)
						}
					} else {
						var f *dispatcher.Future[int]
						f, err = dispatcher.Submit(ctx, d, task)
						if err == nil {
							accepted.Add(1)
							v, err = f.Wait(context.Background())
						}
					}
					cancel()
					switch {
					case err == nil:
						assert.Equal(t, id, v)
						answered.Add(1)
					case id%9 == 1:
						assert.ErrorIs(t, err, dispatcher.ErrTaskPanicked)
						answered.Add(1)
					case id%9 == 2:
						assert.ErrorIs(t, err, dispatcher.ErrTaskExited)
						answered.Add(1)
					case id%9 == 3:
						assert.ErrorIs(t, err, context.Canceled)
					default:
						t.Errorf("request %d: %v", id, err)
					}
				}
			})
		}
		wg.Wait()
	})
	close(stop)
	churn.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	within(t, 10*time.Second, "Close", func() { _ = d.Close(ctx); <-d.Done() })
	s := d.Stats()
	require.Equal(t, s.Dispatched, s.Completed)
	require.Zero(t, s.Pending)
	var pend int
	for _, w := range s.Workers {
		pend += w.Pending
	}
	require.Zero(t, pend)
	require.GreaterOrEqual(t, s.Replaced, int64(1))
}
