package dispatcher_test

import (
	"context"
	"errors"
	"testing"
	"time"

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
				var d *dispatcher.Dispatcher[int]
				var err error
				require.NotPanics(t, func() {
					d, err = dispatcher.New[int](append([]dispatcher.Option{dispatcher.WithEngine(eng)}, tc.opts...)...)
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
			{"Do nil task", func() error { _, err := d.Do(context.Background(), nil); return err }, []error{dispatcher.ErrNilTask}},
			{"Submit nil task", func() error { _, err := d.Submit(context.Background(), nil); return err }, []error{dispatcher.ErrNilTask}},
			{"TrySubmit nil task", func() error { _, err := d.TrySubmit(context.Background(), nil); return err }, []error{dispatcher.ErrNilTask}},
			{"Key Do nil task", func() error { _, err := d.Key(1).Do(context.Background(), nil); return err }, []error{dispatcher.ErrNilTask}},
			{"Do nil context", func() error { _, err := d.Do(nilCtx, ok(1)); return err }, []error{dispatcher.ErrNilContext}},
			{"Submit nil context", func() error { _, err := d.Submit(nilCtx, ok(1)); return err }, []error{dispatcher.ErrNilContext}},
			{"TrySubmit nil context", func() error { _, err := d.TrySubmit(nilCtx, ok(1)); return err }, []error{dispatcher.ErrNilContext}},
			{"Key Submit nil context", func() error { _, err := d.Key(1).Submit(nilCtx, ok(1)); return err }, []error{dispatcher.ErrNilContext}},
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
		v, err := d.Do(context.Background(), ok(3))
		require.NoError(t, err)
		require.Equal(t, 3, v)
		require.Equal(t, int64(1), d.Stats().Completed, "no bad call was accepted")
	})
}

// TestBadPickAnswered: a strategy that picks no live worker gets each
// request answered with ErrBadPick instead of losing it.
func TestBadPickAnswered(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithStrategy(&fixedStrategy{pick: 7}))
		for range 3 {
			var err error
			within(t, 10*time.Second, "Do with a bad pick", func() { _, err = d.Do(context.Background(), ok(1)) })
			require.ErrorIs(t, err, dispatcher.ErrBadPick)
		}
		f, err := d.Submit(context.Background(), ok(1))
		require.NoError(t, err)
		_, err = waitFuture(t, f, 10*time.Second)
		require.True(t, errors.Is(err, dispatcher.ErrBadPick))
	})
}
