package dispatcher_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

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

// TestEngineGivenTwice: every other option refuses being given twice
// ("the second would silently replace the first"), and plan promises to
// refuse contradictions naming both sides instead of letting the last one
// win. WithEngine(Channels) then WithEngine(Rings) is such a contradiction.
func TestEngineGivenTwice(t *testing.T) {
	d, err := dispatcher.New(dispatcher.WithEngine(dispatcher.Channels), dispatcher.WithEngine(dispatcher.Rings))
	if d != nil {
		_ = d.Close(context.Background())
	}
	require.ErrorIs(t, err, dispatcher.ErrBadOption, "WithEngine given twice with different engines was accepted; the last one silently won")
}
