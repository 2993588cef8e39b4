package httpbalancer_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/gobalancer/balancer/contrib/httpbalancer"
	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAddUnderLoad: a backend added while 16 clients send requests takes
// traffic at once, and nothing is lost on the way; weight changes and
// churn of a second added backend run at the same time (under -race).
func TestAddUnderLoad(t *testing.T) {
	ctx := guard(t, 15*time.Second)
	bs := startBackends(t, time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond)
	p, proxy := newProxy(t, urls(bs[:2]), "least-pending", nil)
	bg := startLoad(ctx, client(t), proxy.URL, 16)
	waitFor(t, ctx, "load", func() bool { return bg.sent.Load() > 200 })

	require.NoError(t, p.Add(urls(bs)[2], 1))
	var wg sync.WaitGroup
	wg.Go(func() {
		u := urls(bs)[3]
		for range 20 { // assert: require may not stop the test from here
			assert.NoError(t, p.Add(u, 2))
			assert.NoError(t, p.SetWeight(u, 1))
			assert.NoError(t, p.Remove(u))
		}
	})
	waitFor(t, ctx, "traffic on the added backend", func() bool { return bs[2].calls.Load() > 100 })
	wg.Wait()
	res := bg.finish()
	requireAnswered(t, res)
	require.Equal(t, map[int]int{http.StatusOK: res.status[http.StatusOK]}, res.status, "bodies %v", res.bodies)
	t.Logf("statuses %v, counts %v", res.status, counts(bs))
}

// TestRemoveInFlight: a backend removed while it holds requests gets no new
// ones, and those it holds finish with its answer; it leaves Stats when
// they are done.
func TestRemoveInFlight(t *testing.T) {
	ctx := guard(t, 10*time.Second)
	release := make(chan struct{})
	var slow *live
	slow = startServing(t, func(w http.ResponseWriter, r *http.Request) {
		slow.calls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		_, _ = io.WriteString(w, "slow")
	})
	fast := startLive(t, "fast")
	p, proxy := newProxy(t, []*url.URL{slow.url(), fast.url()}, "round-robin", nil)
	c := client(t)

	// Round-robin alternates, so requests are sent one at a time until the
	// slow backend holds three; the ones on the fast backend just answer.
	const held = 3
	answers := make(chan string, 2*held+1)
	get := func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, proxy.URL, nil)
		resp, err := c.Do(req)
		if err != nil {
			answers <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		answers <- fmt.Sprint(resp.StatusCode, " ", string(b))
	}
	sent := 0
	for slow.calls.Load() < held {
		n := slow.calls.Load() + fast.calls.Load()
		go get()
		sent++
		waitFor(t, ctx, "the request picked", func() bool { return slow.calls.Load()+fast.calls.Load() > n })
	}
	require.NoError(t, p.Remove(slow.url()))
	st, ok := statsOf(p, slow.url())
	require.True(t, ok, "kept while requests are in flight")
	require.Equal(t, held, st.InFlight)
	require.Equal(t, "removed", st.Reason)

	res := load(ctx, c, proxy.URL, http.MethodGet, 50, 4)
	require.Equal(t, map[int]int{http.StatusOK: 50}, res.status)
	require.Equal(t, int64(held), slow.calls.Load(), "no new request on a removed backend")

	close(release)
	got := map[string]int{}
	for range sent {
		got[<-answers]++
	}
	require.Equal(t, map[string]int{"200 slow": held, "200 fast": sent - held}, got)
	_, ok = statsOf(p, slow.url())
	require.False(t, ok, "gone once drained")
	require.ErrorIs(t, p.Remove(slow.url()), httpbalancer.ErrUnknownBackend)
}

// TestSetBackends: the list replaces the members by URL and weights them.
func TestSetBackends(t *testing.T) {
	needStrategy(t, "swrr")
	ctx := guard(t, 10*time.Second)
	bs := startBackends(t, 0, 0, 0)
	us := urls(bs)
	p, proxy := newProxy(t, us[:2], "swrr", nil)
	require.NoError(t, p.SetBackends([]httpbalancer.Backend{{URL: us[1], Weight: 2}, {URL: us[2], Weight: 1}}))
	for _, b := range bs {
		b.calls.Store(0)
	}
	res := load(ctx, client(t), proxy.URL, http.MethodGet, 300, 4)
	require.Equal(t, map[int]int{http.StatusOK: 300}, res.status)
	require.Equal(t, []int64{0, 200, 100}, counts(bs))
	var got []string
	for _, st := range p.Stats() {
		got = append(got, st.URL)
	}
	require.Equal(t, []string{us[1].String(), us[2].String()}, got)
}

func TestMembershipErrors(t *testing.T) {
	u1, _ := url.Parse("http://127.0.0.1:1")
	u2, _ := url.Parse("http://127.0.0.1:2")
	static, err := httpbalancer.New([]*url.URL{u1}, &spy{})
	require.NoError(t, err)
	require.ErrorIs(t, static.Add(u2, 1), httpbalancer.ErrNotDynamic)
	require.ErrorIs(t, static.Remove(u1), httpbalancer.ErrNotDynamic)
	require.ErrorIs(t, static.SetWeight(u1, 2), httpbalancer.ErrNotDynamic)
	require.ErrorIs(t, static.SetBackends([]httpbalancer.Backend{{URL: u1, Weight: 1}}), httpbalancer.ErrNotDynamic)

	s, err := strategies.New("least-pending", strategies.Equal(1))
	require.NoError(t, err)
	p, err := httpbalancer.New([]*url.URL{u1}, s)
	require.NoError(t, err)
	require.ErrorIs(t, p.Add(u1, 1), httpbalancer.ErrDuplicateBackend)
	require.ErrorIs(t, p.Add(&url.URL{Path: "/x"}, 1), httpbalancer.ErrConfig)
	require.ErrorIs(t, p.Add(nil, 1), httpbalancer.ErrConfig)
	require.ErrorIs(t, p.Add(u2, -1), strategies.ErrNegativeWeight)
	require.ErrorIs(t, p.Remove(u2), httpbalancer.ErrUnknownBackend)
	require.ErrorIs(t, p.Remove(nil), httpbalancer.ErrUnknownBackend)
	require.ErrorIs(t, p.Remove(u1), strategies.ErrLastMember)
	require.ErrorIs(t, p.SetWeight(u1, strategies.MaxWeight+1), strategies.ErrTooLarge)
	require.ErrorIs(t, p.SetBackends(nil), httpbalancer.ErrConfig)
	require.ErrorIs(t, p.SetBackends([]httpbalancer.Backend{{URL: u2, Weight: 1}, {URL: u2, Weight: 1}}), httpbalancer.ErrDuplicateBackend)
	require.ErrorIs(t, p.SetBackends([]httpbalancer.Backend{{URL: u2, Weight: 0}}), strategies.ErrAllZero)
	require.Len(t, p.Stats(), 1, "a refused list changes nothing")
	_, err = httpbalancer.New([]*url.URL{u1, u1}, s)
	require.ErrorIs(t, err, httpbalancer.ErrDuplicateBackend)

	require.NoError(t, p.Close())
	require.ErrorIs(t, p.SetWeight(u1, 1), httpbalancer.ErrClosed)
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	require.Equal(t, http.StatusBadGateway, rec.Code)
	require.Equal(t, "httpbalancer: proxy closed\n", rec.Body.String())
}
