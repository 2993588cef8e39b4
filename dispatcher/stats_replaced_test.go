package dispatcher_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// Stats.Replaced counts a Goexit's replacement (a task's or a panic
// handler's) before the request is answered, so Stats read after the
// answer has it, exactly, even when the worker is removed and its index
// reused at once. It used to be counted on the way out of the old
// goroutine, after the answer: a read right after it could be one short,
// and an index reused before the old goroutine left lost the count for
// good (181 against 182 Goexits under churn). The window is a few
// instructions wide, so this end-to-end test rarely caught it;
// worker.TestReplacedCountedBeforeTheAnswer pins the order itself.
func TestStatsReplacedExact(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		within(t, 20*time.Second, "Goexits with index reuse", func() {
			// Every other task panics and the panic handler calls Goexit:
			// that replacement too is counted before the answer.
			d, err := dispatcher.New(dispatcher.WithWorkers(2), dispatcher.WithEngine(eng),
				dispatcher.WithPanicHandler(func(*dispatcher.PanicError) { runtime.Goexit() }))
			require.NoError(t, err)
			defer func() { assert.NoError(t, d.Close(context.Background())) }()
			ctx := context.Background()
			exit := func(context.Context) (int, error) { runtime.Goexit(); return 0, nil }
			panics := func(context.Context) (int, error) { panic("handler exits") }
			for n := int64(1); n <= 300; n++ {
				if n%2 == 0 {
					_, err := dispatcher.Do(ctx, d, panics)
					require.True(t, errors.Is(err, dispatcher.ErrTaskPanicked), "%v", err)
				} else {
					_, err := dispatcher.Do(ctx, d, exit)
					require.True(t, errors.Is(err, dispatcher.ErrTaskExited), "%v", err)
				}
				if !assert.Equal(t, n, d.Stats().Replaced, "read right after the %d-th Goexit's answer", n) {
					return
				}
				// Replace a worker at once: the lowest removed index that
				// has finished its queue is reused.
				i, err := d.AddWorker(1)
				require.NoError(t, err)
				for _, w := range d.Stats().Workers {
					if !w.Removed && w.Index != i {
						require.NoError(t, d.RemoveWorker(w.Index))
						break
					}
				}
			}
		})
	})
}
