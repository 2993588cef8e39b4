package httpbalancer_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// live is a backend that can die (listener and connections closed) and
// come back on the same address, as a restarted process would. Its handler
// answers /healthz with health() and everything else with serve().
type live struct {
	t      *testing.T
	addr   string
	h      http.Handler
	calls  atomic.Int64 // requests other than health checks
	health atomic.Int32 // status of /healthz; 0: 200
	delay  atomic.Int64 // nanoseconds every answer waits

	mu  sync.Mutex
	srv *httptest.Server
}

func startLive(t *testing.T, name string) *live {
	l := &live{t: t}
	l.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := time.Duration(l.delay.Load()); d > 0 {
			tm := time.NewTimer(d)
			defer tm.Stop()
			select {
			case <-tm.C:
			case <-r.Context().Done():
				return
			}
		}
		if r.URL.Path == "/healthz" {
			if code := int(l.health.Load()); code != 0 {
				w.WriteHeader(code)
			}
			return
		}
		l.calls.Add(1)
		_, _ = w.Write([]byte(name))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l.addr = ln.Addr().String()
	l.serve(ln)
	t.Cleanup(l.stop)
	return l
}

func (l *live) url() *url.URL { return &url.URL{Scheme: "http", Host: l.addr} }

func (l *live) serve(ln net.Listener) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: l.h}}
	l.srv.Start()
}

// stop kills the backend: requests in flight on it lose their connection.
func (l *live) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.srv != nil {
		l.srv.CloseClientConnections()
		l.srv.Close()
		l.srv = nil
	}
}

// restart listens on the same address again (Go's listeners set
// SO_REUSEADDR, so the old connections in TIME_WAIT do not block it).
func (l *live) restart() {
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", l.addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(l.t, err, "relisten on %s", l.addr)
	l.serve(ln)
}

// startServing is a live backend with its own handler (which counts no
// calls unless it does so itself).
func startServing(t *testing.T, h http.HandlerFunc) *live {
	l := startLive(t, "")
	l.stop()
	l.h = h
	l.restart()
	return l
}
