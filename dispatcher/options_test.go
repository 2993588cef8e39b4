package dispatcher_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
)

// TestBadOptions: every bad option is a named error from New, never a
// panic.
func TestBadOptions(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for _, tc := range []struct {
			name string
			opts []dispatcher.Option
			also error // a second sentinel the error must match, if any
		}{
			{"zero workers", []dispatcher.Option{dispatcher.WithWorkers(0)}, nil},
			{"negative workers", []dispatcher.Option{dispatcher.WithWorkers(-3)}, nil},
			{"no weights", []dispatcher.Option{dispatcher.WithWeights()}, nil},
			{"negative weight", []dispatcher.Option{dispatcher.WithWeights(1, -1)}, strategies.ErrNegativeWeight},
			{"all weights zero", []dispatcher.Option{dispatcher.WithWeights(0, 0)}, strategies.ErrAllZero},
			{"negative weight with a custom strategy", []dispatcher.Option{dispatcher.WithWeights(1, -1), dispatcher.WithStrategy(&fixedStrategy{})}, nil},
			{"negative worker buffer", []dispatcher.Option{dispatcher.WithWorkerBuffer(-1)}, nil},
			{"negative completion buffer", []dispatcher.Option{dispatcher.WithCompletionBuffer(-1)}, nil},
			{"negative intake buffer", []dispatcher.Option{dispatcher.WithIntakeBuffer(-1)}, nil},
			{"unknown strategy", []dispatcher.Option{dispatcher.WithStrategyName("no-such-strategy")}, strategies.ErrUnknown},
			{"nil strategy", []dispatcher.Option{dispatcher.WithStrategy(nil)}, nil},
			{"nil option", []dispatcher.Option{nil}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var d *dispatcher.Dispatcher
				var err error
				require.NotPanics(t, func() {
					d, err = dispatcher.New(append([]dispatcher.Option{dispatcher.WithEngine(eng)}, tc.opts...)...)
				})
				require.ErrorIs(t, err, dispatcher.ErrBadOption)
				if tc.also != nil {
					require.ErrorIs(t, err, tc.also)
				}
				require.Nil(t, d)
			})
		}
	})
}

// TestBadCalls: a nil task or context, bad membership arguments: each a
// named error, and the dispatcher keeps serving.
func TestBadCalls(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		var nilCtx context.Context
		for _, tc := range []struct {
			name string
			call func() error
			want []error
		}{
			{"Do nil task", func() error { _, err := dispatcher.Do[int](context.Background(), d, nil); return err }, []error{dispatcher.ErrNilTask}},
			{"Submit nil task", func() error { _, err := dispatcher.Submit[int](context.Background(), d, nil); return err }, []error{dispatcher.ErrNilTask}},
			{"TrySubmit nil task", func() error { _, err := dispatcher.TrySubmit[int](context.Background(), d, nil); return err }, []error{dispatcher.ErrNilTask}},
			{"Key Do nil task", func() error { _, err := dispatcher.Do[int](context.Background(), d.Key(1), nil); return err }, []error{dispatcher.ErrNilTask}},
			{"Do nil context", func() error { _, err := dispatcher.Do(nilCtx, d, ok(1)); return err }, []error{dispatcher.ErrNilContext}},
			{"Submit nil context", func() error { _, err := dispatcher.Submit(nilCtx, d, ok(1)); return err }, []error{dispatcher.ErrNilContext}},
			{"TrySubmit nil context", func() error { _, err := dispatcher.TrySubmit(nilCtx, d, ok(1)); return err }, []error{dispatcher.ErrNilContext}},
			{"Key Submit nil context", func() error { _, err := dispatcher.Submit(nilCtx, d.Key(1), ok(1)); return err }, []error{dispatcher.ErrNilContext}},
			{"Close nil context", func() error { return d.Close(nilCtx) }, []error{dispatcher.ErrNilContext}},
			{"AddWorker negative weight", func() error { _, err := d.AddWorker(-1); return err }, []error{dispatcher.ErrBadOption, strategies.ErrNegativeWeight}},
			{"SetWeight negative", func() error { return d.SetWeight(0, -1) }, []error{strategies.ErrNegativeWeight}},
			{"SetWeight no such worker", func() error { return d.SetWeight(99, 1) }, []error{dispatcher.ErrNoWorker}},
			{"RemoveWorker no such worker", func() error { return d.RemoveWorker(-1) }, []error{dispatcher.ErrNoWorker}},
			{"SetWeight last positive to 0", func() error {
				if err := d.SetWeight(1, 0); err != nil {
					return err
				}
				defer func() { _ = d.SetWeight(1, 1) }()
				return d.SetWeight(0, 0)
			}, []error{strategies.ErrLastMember}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var err error
				require.NotPanics(t, func() { err = tc.call() })
				for _, want := range tc.want {
					require.ErrorIs(t, err, want)
				}
			})
		}
		var v int
		var err error
		within(t, 10*time.Second, "Do after the bad calls", func() { v, err = dispatcher.Do(context.Background(), d, ok(3)) })
		require.NoError(t, err)
		require.Equal(t, 3, v)
		require.Equal(t, int64(1), d.Stats().Completed, "no bad call was accepted")
	})
}

// TestContradictoryOptions: every contradiction is refused by New with
// ErrBadOption, naming both options, instead of failing (or crashing) at
// the first request or membership change.
func TestContradictoryOptions(t *testing.T) {
	rr, err := strategies.New("round-robin", strategies.Equal(3))
	require.NoError(t, err)
	var typedNil *fixedStrategy
	for _, tc := range []struct {
		name string
		opts []dispatcher.Option
		says []string
	}{
		{"weights and fewer workers", []dispatcher.Option{dispatcher.WithWeights(1, 2, 3), dispatcher.WithWorkers(1)}, []string{"WithWorkers(1)", "WithWeights"}},
		{"weights and more workers", []dispatcher.Option{dispatcher.WithWeights(1, 2), dispatcher.WithWorkers(5)}, []string{"WithWorkers(5)", "WithWeights"}},
		{"strategy of 3 members, 2 workers", []dispatcher.Option{dispatcher.WithStrategy(rr), dispatcher.WithWorkers(2)}, []string{"3 members", "2 workers"}},
		{"two strategy names", []dispatcher.Option{dispatcher.WithStrategyName("swrr"), dispatcher.WithStrategyName("iwrr")}, []string{"WithStrategyName given twice"}},
		{"strategy and strategy name", []dispatcher.Option{dispatcher.WithStrategy(&fixedStrategy{}), dispatcher.WithStrategyName("swrr")}, []string{"WithStrategy", "WithStrategyName"}},
		{"typed nil strategy", []dispatcher.Option{dispatcher.WithStrategy(typedNil)}, []string{"nil strategy"}},
		{"custom strategy, all weights zero", []dispatcher.Option{dispatcher.WithStrategy(&fixedStrategy{}), dispatcher.WithWeights(0, 0)}, []string{"every weight is zero"}},
		{"worker buffer MaxInt", []dispatcher.Option{dispatcher.WithWorkerBuffer(math.MaxInt)}, []string{"worker buffer"}},
		{"worker buffer 1<<62", []dispatcher.Option{dispatcher.WithWorkerBuffer(min(1<<62, math.MaxInt))}, []string{"worker buffer"}},
		{"worker buffer 1<<40", []dispatcher.Option{dispatcher.WithWorkerBuffer(min(1<<40, math.MaxInt))}, []string{"worker buffer"}},
		{"queues too large together", []dispatcher.Option{dispatcher.WithWorkers(1 << 10), dispatcher.WithWorkerBuffer(1 << 12)}, []string{"MaxBuffer"}},
		{"intake MaxInt", []dispatcher.Option{dispatcher.WithIntakeBuffer(math.MaxInt)}, []string{"intake buffer"}},
		{"completion MaxInt", []dispatcher.Option{dispatcher.WithEngine(dispatcher.Channels), dispatcher.WithCompletionBuffer(math.MaxInt)}, []string{"completion buffer"}},
		{"workers MaxInt", []dispatcher.Option{dispatcher.WithWorkers(math.MaxInt)}, []string{"workers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d *dispatcher.Dispatcher
			var err error
			within(t, 5*time.Second, "New", func() {
				assert.NotPanics(t, func() { d, err = dispatcher.New(tc.opts...) })
			})
			require.ErrorIs(t, err, dispatcher.ErrBadOption)
			require.Nil(t, d)
			for _, s := range tc.says {
				require.Contains(t, err.Error(), s)
			}
		})
	}
}

// TestZeroValueDispatcher: a Dispatcher not made by New answers
// ErrNotStarted from every method, never a panic or a hang.
func TestZeroValueDispatcher(t *testing.T) {
	ctx := context.Background()
	for name, d := range map[string]*dispatcher.Dispatcher{"zero value": {}, "nil pointer": nil} {
		t.Run(name, func(t *testing.T) {
			within(t, 5*time.Second, "calls on "+name, func() {
				assert.NotPanics(t, func() {
					_, err := dispatcher.Do(ctx, d, ok(1))
					assert.ErrorIs(t, err, dispatcher.ErrNotStarted)
					_, err = dispatcher.Submit(ctx, d, ok(1))
					assert.ErrorIs(t, err, dispatcher.ErrNotStarted)
					_, err = dispatcher.TrySubmit(ctx, d, ok(1))
					assert.ErrorIs(t, err, dispatcher.ErrNotStarted)
					assert.ErrorIs(t, d.Go(ctx, func(ctx context.Context) error { _, err := ok(1)(ctx); return err }), dispatcher.ErrNotStarted)
					assert.ErrorIs(t, d.Key(1).Go(ctx, func(ctx context.Context) error { _, err := ok(1)(ctx); return err }), dispatcher.ErrNotStarted)
					_, err = d.AddWorker(1)
					assert.ErrorIs(t, err, dispatcher.ErrNotStarted)
					assert.ErrorIs(t, d.RemoveWorker(0), dispatcher.ErrNotStarted)
					assert.ErrorIs(t, d.SetWeight(0, 1), dispatcher.ErrNotStarted)
					assert.ErrorIs(t, d.Close(ctx), dispatcher.ErrNotStarted)
					assert.Equal(t, dispatcher.Stats{}, d.Stats())
					<-d.Done()
				})
			})
		})
	}
}

// TestHardenedCalls covers runtime calls on both engines: Future.Wait with
// a nil context, and one error rule for membership calls.
func TestHardenedCalls(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(e), dispatcher.WithWorkers(2), dispatcher.WithStrategyName("swrr"))
		f, err := dispatcher.Submit(context.Background(), d, ok(3))
		require.NoError(t, err)
		var nilCtx context.Context
		_, err = f.Wait(nilCtx)
		require.ErrorIs(t, err, dispatcher.ErrNilContext)
		v, err := waitFuture(t, f, 5*time.Second)
		require.NoError(t, err)
		require.Equal(t, 3, v)

		err = d.SetWeight(0, -1)
		require.ErrorIs(t, err, dispatcher.ErrBadOption)
		require.ErrorIs(t, err, strategies.ErrNegativeWeight)
		require.NoError(t, d.SetWeight(0, 0))
		err = d.RemoveWorker(1)
		require.ErrorIs(t, err, dispatcher.ErrBadOption, "removing the last weighted worker")
		require.ErrorIs(t, err, strategies.ErrLastMember)
		_, err = d.AddWorker(-1)
		require.ErrorIs(t, err, dispatcher.ErrBadOption)
		require.ErrorIs(t, d.RemoveWorker(7), dispatcher.ErrNoWorker)
	})
}
