package dispatcher_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestWorkerSurvivesPanicGoexitMix: tasks that mix panic, recover and
// runtime.Goexit in the orders the runtime allows, on the only worker.
// Each is answered once with a failure, and the worker (or its
// replacement) serves the next Do; Close returns. A worker that lost
// track of which way its task left would answer twice, not at all, or
// leave no goroutine to run the next request, and with one worker the
// next Do or Close would hang.
func TestWorkerSurvivesPanicGoexitMix(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) { survivePanicGoexitMix(t, eng) })
}

func survivePanicGoexitMix(t *testing.T, eng dispatcher.Engine) {
	for _, tc := range []struct {
		name string
		task func()
		want error // the fault's answer
		val  any   // the *PanicError's value, if want is ErrTaskPanicked
		pnil bool  // the value is a *runtime.PanicNilError
	}{
		{
			name: "panic in a deferred call during Goexit",
			task: func() {
				defer func() { panic("boom") }()
				runtime.Goexit()
			},
			want: dispatcher.ErrTaskPanicked, val: "boom",
		},
		{
			name: "re-panic in a deferred call after recover",
			task: func() {
				defer func() {
					if v := recover(); v != nil {
						panic(fmt.Sprintf("again: %v", v))
					}
				}()
				panic("first")
			},
			want: dispatcher.ErrTaskPanicked, val: "again: first",
		},
		{
			name: "panic(nil)",
			task: func() { panic(nil) },
			want: dispatcher.ErrTaskPanicked, pnil: true,
		},
		{
			name: "Goexit in a deferred call during a panic",
			task: func() {
				defer runtime.Goexit()
				panic("boom")
			},
			want: dispatcher.ErrTaskExited,
		},
		{
			name: "recover then Goexit in one deferred call",
			task: func() {
				defer func() {
					recover()
					runtime.Goexit()
				}()
				panic("boom")
			},
			want: dispatcher.ErrTaskExited,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			{
				const bound = 10 * time.Second
				d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(1))
				require.NoError(t, err)
				// Twice: the replacement goroutine must survive the same
				// fault as the first.
				for round := range 2 {
					var ferr, nerr error
					var v int
					within(t, bound, "the fault's answer", func() {
						_, ferr = dispatcher.Do(context.Background(), d, func(context.Context) (int, error) { tc.task(); return 0, nil })
					})
					require.ErrorIs(t, ferr, tc.want, "round %d", round)
					if tc.want == dispatcher.ErrTaskPanicked {
						var pe *dispatcher.PanicError
						require.ErrorAs(t, ferr, &pe)
						if tc.pnil {
							var pn *runtime.PanicNilError
							assert.ErrorAs(t, ferr, &pn)
						} else {
							assert.Equal(t, tc.val, pe.Value)
						}
					}
					within(t, bound, "the next Do", func() { v, nerr = dispatcher.Do(context.Background(), d, ok(round)) })
					require.NoError(t, nerr, "round %d", round)
					require.Equal(t, round, v)
				}
				var cerr error
				within(t, bound, "Close", func() { cerr = d.Close(context.Background()) })
				require.NoError(t, cerr)
				s := d.Stats()
				require.Equal(t, int64(4), s.Completed)
				require.Equal(t, s.Dispatched, s.Completed)
			}
		})
	}
}
