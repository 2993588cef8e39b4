package dispatcher_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// Every legal order of answer, Wait (several at once), Done and Release,
// on reused Futures, while Close abandons: each Wait sees its own task's
// answer or an abandon error, never another task's.
func TestFutureReuseStress(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for round := range 4 {
			d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
			require.NoError(t, err)
			var next atomic.Int64
			var wrong atomic.Int64
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for g := range 8 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(g), uint64(round)))
					ctx := context.Background()
					for {
						select {
						case <-stop:
							return
						default:
						}
						v := int(next.Add(1))
						spin := rng.IntN(3) == 0
						f, err := dispatcher.Submit(ctx, d, func(context.Context) (int, error) {
							if spin {
								for s := time.Now(); time.Since(s) < 5*time.Microsecond; {
								}
							}
							return v, nil
						})
						if err != nil {
							assert.ErrorIs(t, err, dispatcher.ErrClosed)
							return
						}
						check := func(got int, err error) {
							if err == nil && got != v {
								wrong.Add(1)
							}
							if err != nil {
								assert.ErrorIs(t, err, dispatcher.ErrClosed)
							}
						}
						switch rng.IntN(5) {
						case 0: // release at once
							f.Release()
						case 1: // several waiters, then release
							var ws sync.WaitGroup
							for range 1 + rng.IntN(4) {
								ws.Go(func() { check(f.Wait(ctx)) })
							}
							if rng.IntN(2) == 0 {
								<-f.Done()
							}
							ws.Wait()
							f.Release()
						case 2: // Done only, then release
							<-f.Done()
							f.Release()
						case 3: // Done called, released before the answer maybe
							_ = f.Done()
							short, cancel := context.WithTimeout(ctx, time.Duration(rng.IntN(3))*time.Microsecond)
							_, _ = f.Wait(short)
							cancel()
							f.Release()
						case 4: // never released
							check(f.Wait(ctx))
						}
					}
				})
			}
			time.Sleep(150 * time.Millisecond)
			cctx, cancel := context.WithTimeout(context.Background(), time.Duration(round)*time.Millisecond)
			_ = d.Close(cctx)
			cancel()
			close(stop)
			within(t, 20*time.Second, "the submitters", wg.Wait)
			within(t, 20*time.Second, "Done", func() { <-d.Done() })
			assert.Zero(t, wrong.Load(), "a Wait saw another task's answer")
		}
	})
}
