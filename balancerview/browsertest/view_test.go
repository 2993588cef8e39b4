package browsertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gobalancer/balancer/balancerview"
	"github.com/gobalancer/balancer/dispatcher"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// chromium is the browser the test drives: BALANCERVIEW_CHROMIUM, or
// Debian's /usr/bin/chromium. Missing, the test fails: a skip would let
// the page's test rot unnoticed.
func chromium(t *testing.T) string {
	path := os.Getenv("BALANCERVIEW_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no Chromium at %s (%v): install Debian's package (apt-get install -y chromium; .ci/run does) "+
			"or set BALANCERVIEW_CHROMIUM to a Chromium binary", path, err)
	}
	return path
}

// workload keeps d busy until stop: two requesters outside groups, a group
// of a tenant "interactive" in priority class 2, one task in 500 panicking.
func workload(d *dispatcher.Dispatcher, stop <-chan struct{}) (wait func()) {
	var wg sync.WaitGroup
	ctx := context.Background()
	task := func(n int) func(context.Context) (int, error) {
		return func(context.Context) (int, error) {
			if n%500 == 499 {
				panic("an injected panic")
			}
			time.Sleep(time.Duration(200+(n*7919)%1800) * time.Microsecond)
			return n, nil
		}
	}
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	for r := range 3 {
		wg.Go(func() {
			for n := r; !stopped(); n += 3 {
				_, _ = dispatcher.Do(ctx, d, task(n))
			}
		})
	}
	wg.Go(func() {
		for n := 0; !stopped(); n++ {
			g := dispatcher.NewGroup[int](ctx, d, dispatcher.Tenant("interactive"))
			for i := range 4 {
				g.Go(task(4*n + i))
			}
			_, _ = g.Wait()
			time.Sleep(2 * time.Millisecond)
		}
	})
	return wg.Wait
}

// The page loads in a real browser, updates live, and shows the numbers
// the JSON serves.
func TestPageInBrowser(t *testing.T) {
	exec := chromium(t)

	d, err := dispatcher.New(dispatcher.WithWeights(1, 1, 2, 4), dispatcher.WithStrategyName("iwrr"))
	require.NoError(t, err)
	v := balancerview.New(balancerview.WithInterval(250 * time.Millisecond))
	require.NoError(t, v.Register("images", d))
	stop := make(chan struct{})
	wait := workload(d, stop)
	defer func() {
		close(stop)
		wait()
		v.Close()
		assert.NoError(t, d.Close(context.Background()))
	}()

	mux := http.NewServeMux()
	mux.Handle("/debug/balancer/", v.Handler())
	mux.Handle("/admin/balancer/", v.Handler(balancerview.AllowControl()))
	srv := httptest.NewUnstartedServer(mux)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv.Listener = l
	srv.Start()
	defer srv.Close()
	base := srv.URL + "/debug/balancer/"

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(exec),
			chromedp.NoSandbox, // CI runs as root
			chromedp.WindowSize(1280, 1000),
			chromedp.Flag("disable-dev-shm-usage", true),
		)...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	ctx, cancelTime := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTime()

	// At least two live updates after the first drawing.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"?name=images"),
		chromedp.WaitVisible(chromedp.CSS(`#workers tbody tr[data-worker="0"] td.completed`)),
	), "the page did not draw worker 0")
	updates, err := chromedp.Run(ctx, chromedp.Poll[int](`(+document.body.dataset.updates || 0) >= 3 && +document.body.dataset.updates`,
		chromedp.WithPollingInterval(50*time.Millisecond)))
	require.NoError(t, err, "the page did not update live")
	require.GreaterOrEqual(t, updates, 3)

	// What the page shows, read at once (it draws a whole sample at a
	// time): the sample's number, worker 0's completed, the total.
	type shownT struct{ Seq, Worker0, Total, Status string }
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[shownT](`({
		Seq: document.getElementById("seq").textContent,
		Worker0: document.querySelector('#workers tbody tr[data-worker="0"] td.completed').textContent,
		Total: document.getElementById("total-completed").textContent,
		Status: document.getElementById("status").textContent,
	})`))
	require.NoError(t, err)
	assert.Equal(t, "live", shown.Status)
	seq, err := strconv.ParseInt(shown.Seq, 10, 64)
	require.NoError(t, err)
	worker0, total := number(t, shown.Worker0), number(t, shown.Total)
	require.Positive(t, worker0, "worker 0 completed nothing")

	// The JSON's sample of that number says the same.
	s := sample(t, base+"api/images")
	require.GreaterOrEqual(t, s.Seq, seq)
	var p *balancerview.Point
	for i := range s.History {
		if s.History[i].Seq == seq {
			p = &s.History[i]
		}
	}
	require.NotNil(t, p, "sample %d is not in the JSON's history", seq)
	assert.Equal(t, p.Done[0], worker0, "worker 0's completed on the page and in the JSON")
	assert.Equal(t, p.Completed, total, "the total completed on the page and in the JSON")
	// And the JSON's latest is within a sample of Stats.
	now := d.Stats()
	assert.GreaterOrEqual(t, now.Completed, s.Stats.Completed)

	// Read-only: no control form.
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("control").hidden`))
	require.NoError(t, err)
	assert.True(t, hidden, "the read-only page shows a control form")

	if path := os.Getenv("BALANCERVIEW_SCREENSHOT"); path != "" {
		// A few seconds of history first, so that the sparklines show it.
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](`(+document.body.dataset.updates || 0) >= 24`,
			chromedp.WithPollingInterval(100*time.Millisecond)))
		require.NoError(t, err)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, png, 0o644))
		t.Logf("screenshot written to %s", path)
	}

	// With AllowControl, the page's form sets a weight through a POST.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/admin/balancer/?name=images"),
		chromedp.WaitVisible(chromedp.CSS(`#weight-form`)),
		chromedp.SetValue(chromedp.CSS(`#cw-worker`), "1"),
		chromedp.SetValue(chromedp.CSS(`#cw-weight`), "3"),
		chromedp.Click(chromedp.CSS(`#weight-form button`)),
	))
	msg, err := chromedp.Run(ctx, chromedp.Poll[string](`document.getElementById("control-msg").textContent`,
		chromedp.WithPollingInterval(50*time.Millisecond)))
	require.NoError(t, err)
	assert.Equal(t, "done", msg)
	assert.Equal(t, 3, d.Stats().Workers[1].Weight)
}

func number(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
	require.NoError(t, err, "not a number on the page: %q", s)
	return n
}

func sample(t *testing.T, url string) balancerview.Sample {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		require.NoError(t, errors.New(fmt.Sprint("GET ", url, ": ", resp.Status)))
	}
	var s balancerview.Sample
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&s))
	return s
}
