// Command service runs one dispatcher for a whole HTTP service: three
// task types with three result types (a thumbnail's bytes, a report's
// text, a count) share its workers, and three tenants share them by
// weight under the Fair schedule: free 1, pro 2, enterprise 4. Each
// request names its tenant in the X-Tenant header.
//
//	go run ./examples/service -addr 127.0.0.1:8080
//	curl -H 'X-Tenant: pro' '127.0.0.1:8080/count?n=100000'
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gobalancer/balancer/dispatcher"
)

// Shares are the tenants' weights under Fair.
var Shares = map[string]int{"free": 1, "pro": 2, "enterprise": 4}

// Service is the HTTP service: one dispatcher, a view per tenant.
type Service struct {
	d       *dispatcher.Dispatcher
	tenants map[string]dispatcher.View
	mux     *http.ServeMux
}

// New starts the service's dispatcher with the given number of workers.
func New(workers int) (*Service, error) {
	d, err := dispatcher.New(dispatcher.WithWorkers(workers), dispatcher.WithSchedule(dispatcher.Fair))
	if err != nil {
		return nil, err
	}
	s := &Service{d: d, tenants: map[string]dispatcher.View{}, mux: http.NewServeMux()}
	for name, share := range Shares {
		// One view per tenant, made once: every request of the tenant
		// goes through it, so they share one weight.
		v, err := d.Tenant(name, share)
		if err != nil {
			return nil, errors.Join(err, d.Close(context.Background()))
		}
		s.tenants[name] = v
	}
	// Three task types, three result types, one dispatcher.
	s.mux.Handle("GET /thumbnail", handle(s, "side", 64, 1024, Thumbnail, writeBytes))
	s.mux.Handle("GET /report", handle(s, "rows", 200, 100_000, Report, writeText))
	s.mux.Handle("GET /count", handle(s, "n", 20_000, 10_000_000, Primes, writeInt))
	return s, nil
}

// ServeHTTP serves the three task types.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close waits for the tasks in flight and stops the workers.
func (s *Service) Close(ctx context.Context) error { return s.d.Close(ctx) }

// Stats is the dispatcher's snapshot: Tenants has each tenant's figures.
func (s *Service) Stats() dispatcher.Stats { return s.d.Stats() }

// tenant returns the request's tenant view, or writes 400.
func (s *Service) tenant(w http.ResponseWriter, r *http.Request) (dispatcher.View, bool) {
	name := r.Header.Get("X-Tenant")
	v, ok := s.tenants[name]
	if !ok {
		http.Error(w, fmt.Sprintf("unknown tenant %q (X-Tenant: free, pro or enterprise)", name), http.StatusBadRequest)
	}
	return v, ok
}

// intParam reads a positive integer query parameter, at most max.
func intParam(r *http.Request, name string, def, max int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > max {
		return 0, fmt.Errorf("%s must be an integer in [1, %d]", name, max)
	}
	return n, nil
}

// handle serves one task type: it reads the tenant and the size
// parameter, runs task on the shared dispatcher as that tenant, and
// writes the value it returns, of the task type's own result type R.
func handle[R any](s *Service, param string, def, most int, task func(n int) R, write func(http.ResponseWriter, R)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, ok := s.tenant(w, r)
		if !ok {
			return
		}
		n, err := intParam(r, param, def, most)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		res, err := dispatcher.Do(r.Context(), v, func(context.Context) (R, error) { return task(n), nil })
		if err != nil {
			fail(w, err)
			return
		}
		write(w, res)
	}
}

func writeBytes(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(b)
}

func writeText(w http.ResponseWriter, s string) { _, _ = io.WriteString(w, s) }

func writeInt(w http.ResponseWriter, n int) { _, _ = fmt.Fprintln(w, n) }

// fail writes why a task has no value.
func fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, dispatcher.ErrClosed):
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		http.Error(w, err.Error(), http.StatusGatewayTimeout)
	default:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// Thumbnail renders a side×side gray gradient at four times the size and
// box-filters it down: CPU work returning bytes.
func Thumbnail(side int) []byte {
	big := 4 * side
	out := make([]byte, side*side)
	for y := range side {
		for x := range side {
			sum := 0
			for dy := range 4 {
				for dx := range 4 {
					sum += ((4*x + dx) ^ (4*y + dy)) * 255 / (2 * big)
				}
			}
			out[y*side+x] = byte(sum / 16)
		}
	}
	return out
}

// Report formats rows of running totals: CPU work returning text.
func Report(rows int) string {
	var b strings.Builder
	total := 0
	for i := range rows {
		total += i * i % 97
		fmt.Fprintf(&b, "%d\t%d\n", i, total)
	}
	return b.String()
}

// Primes counts the primes below n with a sieve: CPU work returning an
// int.
func Primes(n int) int {
	composite := make([]bool, n)
	c := 0
	for i := 2; i < n; i++ {
		if composite[i] {
			continue
		}
		c++
		for j := i * i; j < n; j += i {
			composite[j] = true
		}
	}
	return c
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to serve on")
	workers := flag.Int("workers", runtime.GOMAXPROCS(0), "worker goroutines")
	flag.Parse()
	s, err := New(*workers)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Addr: *addr, Handler: s, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	log.Printf("serving on %s (tenants free, pro, enterprise)", *addr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		log.Fatal(err)
	}
}
