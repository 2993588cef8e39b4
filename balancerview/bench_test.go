package balancerview_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gobalancer/balancer/balancerview"
	"github.com/gobalancer/balancer/dispatcher"
)

// benchDo measures Do of an empty task on a 2-worker dispatcher registered
// in a view whose handler is served on 127.0.0.1; with open, a client
// reads the JSON at the page's pace (the view's interval, 100 ms here) so
// that the sampler runs throughout.
func benchDo(b *testing.B, open bool) {
	v := balancerview.New(balancerview.WithInterval(100 * time.Millisecond))
	defer v.Close()
	d, err := dispatcher.New(dispatcher.WithWorkers(2))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close(context.Background())
	if err := v.Register("bench", d); err != nil {
		b.Fatal(err)
	}
	url := serve(b, v.Handler()) + "api/bench"
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		if !open {
			return
		}
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for {
			if resp, err := http.Get(url); err == nil {
				resp.Body.Close()
			}
			select {
			case <-stop:
				return
			case <-tk.C:
			}
		}
	}()
	defer func() { close(stop); <-done }()
	if open {
		// The sampler runs before the clock starts.
		for r, _ := v.Sampling(); !r; r, _ = v.Sampling() {
			time.Sleep(time.Millisecond)
		}
	}
	ctx := context.Background()
	task := func(context.Context) (int, error) { return 1, nil }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := dispatcher.Do(ctx, d, task); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoWithoutView: the same Do with no view at all, the baseline
// the two below are compared with:
//
//	go test -run '^$' -bench 'DoWith' -count 10 ./balancerview/ | benchstat -col /view -
func BenchmarkDoWithoutView(b *testing.B) {
	d, err := dispatcher.New(dispatcher.WithWorkers(2))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close(context.Background())
	ctx := context.Background()
	task := func(context.Context) (int, error) { return 1, nil }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := dispatcher.Do(ctx, d, task); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoWithViewIdle: the handler is mounted, nobody reads it.
func BenchmarkDoWithViewIdle(b *testing.B) { benchDo(b, false) }

// BenchmarkDoWithViewOpen: a client reads the JSON every 100 ms.
func BenchmarkDoWithViewOpen(b *testing.B) { benchDo(b, true) }
