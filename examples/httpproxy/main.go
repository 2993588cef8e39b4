// Command httpproxy starts backends of different latencies and an
// httpbalancer proxy in front of them, all on loopback, sends load through
// the proxy for a few seconds per strategy, and prints how many requests
// each backend served under each strategy, side by side. The defaults
// replay skipper's leastRequests experiment (backends of 1, 5, 10 and 25 s)
// at 4 ms per second.
//
//	go run ./examples/httpproxy -duration 3s -strategies round-robin,least-requests
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/gobalancer/balancer/contrib/httpbalancer"
	"github.com/gobalancer/balancer/strategies"
)

type config struct {
	duration    time.Duration // per strategy
	requests    int           // per strategy; 0: as many as fit in duration
	concurrency int
	latencies   []time.Duration
	strategies  []string
}

func main() {
	var c config
	var lat, strats string
	flag.DurationVar(&c.duration, "duration", 3*time.Second, "load time per strategy")
	flag.IntVar(&c.requests, "requests", 0, "requests per strategy (0: as many as fit in -duration)")
	flag.IntVar(&c.concurrency, "concurrency", 16, "concurrent clients")
	flag.StringVar(&lat, "latencies", "4ms,20ms,40ms,100ms", "backend latencies, comma-separated")
	flag.StringVar(&strats, "strategies", "round-robin,least-requests",
		"strategies to compare, comma-separated (registered: "+strings.Join(strategies.Names(), ", ")+")")
	flag.Parse()
	for _, s := range strings.Split(lat, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d < 0 {
			fmt.Fprintf(os.Stderr, "httpproxy: bad latency %q\n", s)
			os.Exit(2)
		}
		c.latencies = append(c.latencies, d)
	}
	for _, s := range strings.Split(strats, ",") {
		c.strategies = append(c.strategies, strings.TrimSpace(s))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "httpproxy:", err)
		os.Exit(1)
	}
}

// run does the experiment and prints its table to out. Cancelling ctx (a
// signal) ends the load early; the table shows what was sent until then.
func run(ctx context.Context, c config, out io.Writer) error {
	if c.concurrency < 1 || len(c.latencies) == 0 || c.duration <= 0 {
		return errors.New("need -concurrency >= 1, one latency or more and -duration > 0")
	}
	for _, s := range c.strategies {
		if _, err := strategies.New(s, strategies.Equal(1)); err != nil {
			return err
		}
	}
	var targets []*url.URL
	for i, l := range c.latencies {
		u, stop, err := serve(backend(i, l))
		if err != nil {
			return err
		}
		defer stop()
		targets = append(targets, u)
	}

	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = c.concurrency
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	results := make([][]int64, len(c.strategies))
	failed := make([]int64, len(c.strategies))
	for k, name := range c.strategies {
		s, err := strategies.New(name, strategies.Equal(len(targets)))
		if err != nil {
			return err
		}
		p, err := httpbalancer.New(targets, s)
		if err != nil {
			return err
		}
		u, stop, err := serve(p)
		if err != nil {
			return err
		}
		results[k], failed[k] = load(ctx, client, u.String(), len(targets), c)
		stop()
		p.CloseIdleConnections()
		if ctx.Err() != nil {
			break
		}
	}
	report(out, c, results, failed)
	return nil
}

// backend answers its index after its latency.
func backend(i int, latency time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(latency)
		defer t.Stop()
		select {
		case <-t.C:
			fmt.Fprint(w, i)
		case <-r.Context().Done():
		}
	})
}

// serve runs h on a loopback port until stop, which waits for the server.
func serve(h http.Handler) (*url.URL, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
		<-done
	}
	return &url.URL{Scheme: "http", Host: l.Addr().String()}, stop, nil
}

// load sends requests from c.concurrency clients until c.duration is over,
// c.requests have been sent or ctx is cancelled, and counts the answers by
// the backend index in their body.
func load(ctx context.Context, client *http.Client, target string, n int, c config) ([]int64, int64) {
	ctx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	counts := make([]atomic.Int64, n)
	var sent, failed atomic.Int64
	var wg sync.WaitGroup
	for range c.concurrency {
		wg.Go(func() {
			for ctx.Err() == nil && (c.requests == 0 || sent.Add(1) <= int64(c.requests)) {
				i, err := get(ctx, client, target)
				switch {
				case err == nil && i >= 0 && i < n:
					counts[i].Add(1)
				case ctx.Err() == nil: // not cut short by the deadline
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	res := make([]int64, n)
	for i := range counts {
		res[i] = counts[i].Load()
	}
	return res, failed.Load()
}

func get(ctx context.Context, client *http.Client, target string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", resp.Status, b)
	}
	return strconv.Atoi(string(b))
}

// report writes one row per backend and one column per strategy.
func report(out io.Writer, c config, results [][]int64, failed []int64) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "backend\tlatency\t")
	for _, s := range c.strategies {
		fmt.Fprintf(tw, "%s\tshare\t", s)
	}
	fmt.Fprintln(tw)
	totals := make([]int64, len(results))
	for k, r := range results {
		for _, n := range r {
			totals[k] += n
		}
	}
	for i, l := range c.latencies {
		fmt.Fprintf(tw, "%d\t%v\t", i, l)
		for k := range c.strategies {
			if results[k] == nil {
				fmt.Fprint(tw, "-\t-\t")
				continue
			}
			fmt.Fprintf(tw, "%d\t%.1f%%\t", results[k][i], 100*float64(results[k][i])/float64(max(totals[k], 1)))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "total\t\t")
	for k := range c.strategies {
		fmt.Fprintf(tw, "%d\t\t", totals[k])
	}
	fmt.Fprintln(tw)
	fmt.Fprint(tw, "failed\t\t")
	for k := range c.strategies {
		fmt.Fprintf(tw, "%d\t\t", failed[k])
	}
	fmt.Fprintln(tw)
	_ = tw.Flush()
}
