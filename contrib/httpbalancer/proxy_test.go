package httpbalancer_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gobalancer/balancer/contrib/httpbalancer"
	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/require"
)

func TestNewRejectsBadInput(t *testing.T) {
	s, err := strategies.New(strategies.Default, strategies.Equal(1))
	require.NoError(t, err)
	u, _ := url.Parse("http://127.0.0.1:1")
	for name, tc := range map[string]struct {
		targets []*url.URL
		s       strategies.Strategy
		opts    []httpbalancer.Option
	}{
		"no targets":     {nil, s, nil},
		"nil strategy":   {[]*url.URL{u}, nil, nil},
		"relative URL":   {[]*url.URL{{Path: "/x"}}, s, nil},
		"negative eject": {[]*url.URL{u}, s, []httpbalancer.Option{httpbalancer.WithEjectFor(-time.Second)}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := httpbalancer.New(tc.targets, tc.s, tc.opts...)
			require.ErrorIs(t, err, httpbalancer.ErrConfig)
		})
	}
}

// TestNoBackend: with every backend gone, a request fails with 502 and the
// backend's error (after its retry), and once all are ejected with 502 "no
// backend available".
func TestNoBackend(t *testing.T) {
	ctx := guard(t, 10*time.Second)
	bs := startBackends(t, 0, 0)
	proxy := startProxy(t, bs, "round-robin", nil)
	for _, b := range bs {
		b.Close()
	}
	c := client(t)
	get := func() (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, proxy.URL, nil)
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, msg := get()
	require.Equal(t, http.StatusBadGateway, code)
	require.Contains(t, msg, "httpbalancer: backend failed: ")
	require.Contains(t, msg, "; retried: httpbalancer: backend failed: ")

	code, msg = get()
	require.Equal(t, http.StatusBadGateway, code)
	require.True(t, strings.HasPrefix(msg, "httpbalancer: no backend available: "), msg)
	for _, b := range bs {
		require.Contains(t, msg, b.Listener.Addr().String()+" ejected for ", "the reason names each backend")
	}
}

// spy records the strategy calls the proxy makes; the proxy serializes them.
type spy struct {
	picks, dones int
	onDone       func()
}

func (s *spy) Pick(uint64) int { s.picks++; return 0 }
func (s *spy) Done(int, time.Duration) {
	s.dones++
	if s.onDone != nil {
		s.onDone()
	}
}

// TestInFlightUntilBodyDone: the request stays pending in the strategy
// while the backend streams its body, and is done once it has been read.
func TestInFlightUntilBodyDone(t *testing.T) {
	ctx := guard(t, 10*time.Second)
	release := make(chan struct{})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "head ")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		_, _ = io.WriteString(w, "tail")
	}))
	t.Cleanup(backend.Close)
	u, _ := url.Parse(backend.URL)
	sp := &spy{}
	doneAt := make(chan struct{}, 1)
	sp.onDone = func() { doneAt <- struct{}{} }
	p, err := httpbalancer.New([]*url.URL{u}, sp)
	require.NoError(t, err)
	srv := httptest.NewServer(p)
	t.Cleanup(func() { srv.Close(); p.CloseIdleConnections() })

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := client(t).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	head := make([]byte, 5)
	_, err = io.ReadFull(resp.Body, head)
	require.NoError(t, err)
	select {
	case <-doneAt:
		t.Fatal("Done before the body was complete")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "head tail", string(head)+string(rest))
	select {
	case <-doneAt:
	case <-ctx.Done():
		t.Fatal("Done never came")
	}
}

// TestRoutingKey: with a hashing strategy, requests with the same key header
// (or path) reach the same backend.
func TestRoutingKey(t *testing.T) {
	needStrategy(t, "consistent-hash")
	ctx := guard(t, 10*time.Second)
	for name, opt := range map[string]struct {
		key func(*http.Request) uint64
		req func(user string) *http.Request
	}{
		"header": {httpbalancer.KeyHeader("X-User"), func(user string) *http.Request {
			r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
			r.Header.Set("X-User", user)
			return r
		}},
		"path": {httpbalancer.KeyPath, func(user string) *http.Request {
			r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "/users/"+user, nil)
			return r
		}},
	} {
		t.Run(name, func(t *testing.T) {
			bs := startBackends(t, 0, 0, 0, 0)
			proxy := startProxy(t, bs, "consistent-hash", nil, httpbalancer.WithKey(opt.key))
			c := client(t)
			seen := map[string]string{}
			for round := range 3 {
				for _, user := range []string{"ann", "bob", "cy", "dee", "eve", "fay", "gus", "hal"} {
					r := opt.req(user)
					r.URL, _ = url.Parse(proxy.URL + r.URL.Path)
					resp, err := c.Do(r)
					require.NoError(t, err)
					b, err := io.ReadAll(resp.Body)
					_ = resp.Body.Close()
					require.NoError(t, err)
					if round == 0 {
						seen[user] = string(b)
					}
					require.Equal(t, seen[user], string(b), "user %s moved", user)
				}
			}
			backends := map[string]bool{}
			for _, b := range seen {
				backends[b] = true
			}
			require.Greater(t, len(backends), 1, "keys spread over backends: %v", seen)
		})
	}
}

// Requests keep the client's path and query, joined to the target's path.
func TestPathAndQuery(t *testing.T) {
	ctx := guard(t, 10*time.Second)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.URL.RequestURI()+" "+r.Header.Get("X-Forwarded-For"))
	}))
	t.Cleanup(backend.Close)
	u, _ := url.Parse(backend.URL + "/base")
	s, _ := strategies.New("round-robin", strategies.Equal(1))
	p, err := httpbalancer.New([]*url.URL{u}, s)
	require.NoError(t, err)
	srv := httptest.NewServer(p)
	t.Cleanup(func() { srv.Close(); p.CloseIdleConnections() })
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/dir?q=1", nil)
	resp, err := client(t).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.True(t, strings.HasPrefix(string(b), "/base/dir?q=1 127.0.0.1"), "%q", b)
}
