package dispatcher_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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

// TestCompletionBufferNeedsChannels: rings has no completion channel, so
// WithCompletionBuffer there, in either order of the options, is refused
// with an error naming both why (ErrWrongEngine) and what (ErrBadOption),
// instead of being silently ignored; the default engine (channels) takes
// it.
func TestCompletionBufferNeedsChannels(t *testing.T) {
	require.Equal(t, dispatcher.Channels, dispatcher.DefaultEngine)
	for _, tc := range []struct {
		name string
		opts []dispatcher.Option
	}{
		{"explicit rings", []dispatcher.Option{dispatcher.WithEngine(dispatcher.Rings), dispatcher.WithCompletionBuffer(4)}},
		{"explicit rings, unbuffered", []dispatcher.Option{dispatcher.WithCompletionBuffer(0), dispatcher.WithEngine(dispatcher.Rings)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := dispatcher.New(tc.opts...)
			require.ErrorIs(t, err, dispatcher.ErrWrongEngine)
			require.ErrorIs(t, err, dispatcher.ErrBadOption)
			require.Nil(t, d)
		})
	}
	for _, n := range []int{0, 4} {
		t.Run(fmt.Sprintf("default engine/completion=%d", n), func(t *testing.T) {
			d := newDispatcher(t, dispatcher.WithWorkers(2), dispatcher.WithCompletionBuffer(n))
			var v int
			var err error
			within(t, 10*time.Second, "Do", func() { v, err = dispatcher.Do(context.Background(), d, ok(n)) })
			require.NoError(t, err)
			require.Equal(t, n, v)
		})
	}
}

// TestEngineNames: WithEngine accepts only the two engines; an Engine
// reads their names as text in any case (flag.TextVar) and refuses
// anything else with ErrBadOption, unchanged; each engine's text reads
// back to it.
func TestEngineNames(t *testing.T) {
	d, err := dispatcher.New(dispatcher.WithEngine(dispatcher.Engine(99)))
	require.ErrorIs(t, err, dispatcher.ErrBadOption)
	require.Nil(t, d)
	_, err = dispatcher.New(dispatcher.WithEngine(0))
	require.ErrorIs(t, err, dispatcher.ErrBadOption, "the zero Engine is no engine")

	for _, eng := range engines {
		text, err := eng.MarshalText()
		require.NoError(t, err)
		require.Equal(t, eng.String(), string(text))
		var got dispatcher.Engine
		require.NoError(t, got.UnmarshalText(text))
		require.Equal(t, eng, got)
	}
	for name, want := range map[string]dispatcher.Engine{
		"channels": dispatcher.Channels, "Channels": dispatcher.Channels, "CHANNELS": dispatcher.Channels,
		"rings": dispatcher.Rings, "Rings": dispatcher.Rings,
	} {
		var got dispatcher.Engine
		require.NoError(t, got.UnmarshalText([]byte(name)), name)
		require.Equal(t, want, got, name)
	}
	for _, name := range []string{"", "channel", "ring", "chan", " rings", "rings ", "1", "Engine(1)", "default"} {
		got := dispatcher.Rings
		require.ErrorIs(t, got.UnmarshalText([]byte(name)), dispatcher.ErrBadOption, "%q", name)
		require.Equal(t, dispatcher.Rings, got, "a refused name leaves the engine unchanged")
	}
	_, err = dispatcher.Engine(99).MarshalText()
	require.ErrorIs(t, err, dispatcher.ErrBadOption)
	require.Equal(t, "Engine(99)", dispatcher.Engine(99).String())

	// flag.TextVar takes an Engine: the idiom for a command line.
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var eng dispatcher.Engine
	fs.TextVar(&eng, "engine", dispatcher.Channels, "")
	require.NoError(t, fs.Parse([]string{"-engine", "RINGS"}))
	require.Equal(t, dispatcher.Rings, eng)
	require.Error(t, fs.Parse([]string{"-engine", "pike"}))
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

// TestBadPickAnswered: a strategy that picks no live worker gets each
// request answered with ErrBadPick instead of losing it.
func TestBadPickAnswered(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithStrategy(&fixedStrategy{pick: 7}))
		for range 3 {
			var err error
			within(t, 10*time.Second, "Do with a bad pick", func() { _, err = dispatcher.Do(context.Background(), d, ok(1)) })
			require.ErrorIs(t, err, dispatcher.ErrBadPick)
		}
		f, err := dispatcher.Submit(context.Background(), d, ok(1))
		require.NoError(t, err)
		_, err = waitFuture(t, f, 10*time.Second)
		require.True(t, errors.Is(err, dispatcher.ErrBadPick))
	})
}
