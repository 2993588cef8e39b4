package dispatcher_test

import (
	"context"
	"encoding/json"
	"expvar"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// expvarNames makes every published name unique in the process: expvar
// cannot unpublish, and -count=2 runs the tests again in one process.
var expvarNames atomic.Int64

// TestStatsExpvar: the dispatcher's Stats, published with expvar.Func, are
// served by /debug/vars over loopback, fresh at each read.
func TestStatsExpvar(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2))
		name := fmt.Sprintf("balancer-test-%d", expvarNames.Add(1))
		expvar.Publish(name, expvar.Func(func() any { return d.Stats() }))
		var zero dispatcher.Dispatcher
		require.JSONEq(t, mustJSON(t, dispatcher.Stats{}), mustJSON(t, zero.Stats()), "a Dispatcher not made by New has empty Stats")

		srv := httptest.NewServer(expvar.Handler())
		defer srv.Close()
		require.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"), srv.URL)
		read := func() dispatcher.Stats {
			t.Helper()
			resp, err := srv.Client().Get(srv.URL + "/debug/vars")
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var vars map[string]json.RawMessage
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&vars))
			var st dispatcher.Stats
			require.NoError(t, json.Unmarshal(vars[name], &st), "%s", vars[name])
			return st
		}
		require.Zero(t, read().Completed)
		within(t, 10*time.Second, "Do", func() {
			for range 10 {
				_, err := dispatcher.Do(context.Background(), d, ok(1))
				assert.NoError(t, err)
			}
		})
		s := read()
		require.Equal(t, int64(10), s.Completed)
		require.Len(t, s.Workers, 2)
	})
}

// TestStatsIntake: with the only worker busy, Stats tells the requests
// queued in the intake and (rings) the submitters blocked for room;
// afterwards every one of them runs.
func TestStatsIntake(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		const submitters = 5
		d := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(1), dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(2))
		release, started := make(chan struct{}), make(chan struct{})
		var releaseOnce sync.Once
		unblock := func() { releaseOnce.Do(func() { close(release) }) }
		t.Cleanup(unblock)
		f, err := dispatcher.Submit(context.Background(), d, func(context.Context) (int, error) { close(started); <-release; return 0, nil })
		require.NoError(t, err)
		within(t, 10*time.Second, "start", func() { <-started })

		var wg sync.WaitGroup
		t.Cleanup(wg.Wait)
		for i := range submitters {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				v, err := dispatcher.Do(ctx, d, ok(i))
				assert.NoError(t, err)
				assert.Equal(t, i, v)
			})
		}
		// The balancer takes nothing while its only worker is full: two
		// wait in the intake, the rest for room in it.
		want := func(s dispatcher.Stats) bool {
			return !s.Held && s.Queued == 2 && s.Blocked == submitters-2
		}
		var s dispatcher.Stats
		reached := assert.Eventually(t, func() bool { s = d.Stats(); return want(s) }, 10*time.Second, time.Millisecond)
		require.True(t, reached, "%+v", s)
		unblock()
		_, err = waitFuture(t, f, 10*time.Second)
		require.NoError(t, err)
		within(t, 10*time.Second, "submitters", wg.Wait)
		s = d.Stats()
		require.Zero(t, s.Queued)
		require.Zero(t, s.Blocked, "none blocked any more")
		require.Equal(t, int64(submitters+1), s.Completed)
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
