package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gobalancer/balancer/balancerview"
	"github.com/gobalancer/balancer/dispatcher"
	"golang.org/x/sync/errgroup"
)

// viewPath is where -serve mounts the live view.
const viewPath = "/debug/balancer/"

// serveFlag is -serve's help text.
const serveFlag = "serve the live view (package balancerview) on ADDR, e.g. :8080 or 127.0.0.1:8080, and run\nthe requesters until Ctrl-C instead of for -requests"

// checkServe rejects what -serve cannot combine with; set holds the flags
// given, lists the flags given as lists of two or more values.
func (c *config) checkServe(set map[string]bool, lists []string) error {
	if c.serve == "" {
		return nil
	}
	for _, f := range []string{"requests", "picks", "compare", "rounds", "plot", "json", "all", "scenario", "duration"} {
		if set[f] {
			return fmt.Errorf("-serve runs until Ctrl-C with one dispatcher: -%s cannot apply to it", f)
		}
	}
	if len(lists) > 0 {
		return fmt.Errorf("-serve runs one dispatcher: a -%s list cannot apply to it", lists[0])
	}
	return nil
}

// runServe runs the requesters against one dispatcher until ctx ends,
// with the dispatcher on a live page at http://ADDR/debug/balancer/. Then
// it stops the requesters (in-flight requests get grace), the server and
// the dispatcher, prints one line of totals, and returns nil: Ctrl-C is
// how a served run ends.
func runServe(ctx context.Context, c *config, stdout, stderr io.Writer) error {
	s := c.setupWith(nil)
	d, err := dispatcher.New(dispatcherOptions(c, s)...)
	if err != nil {
		return err
	}
	view := balancerview.New()
	defer view.Close()
	if err := view.Register(s.strategy, d); err != nil {
		return errors.Join(err, d.Close(context.Background()))
	}
	ln, err := net.Listen("tcp", c.serve)
	if err != nil {
		return errors.Join(fmt.Errorf("-serve: %w", err), d.Close(context.Background()))
	}
	mux := http.NewServeMux()
	mux.Handle(viewPath, view.Handler())
	mux.Handle("/{$}", http.RedirectHandler(viewPath, http.StatusFound))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "balancer: live view at %s (Ctrl-C stops)\n", viewURL(ln.Addr()))

	ws := newWorkers(c, false)
	p := newPlan(c)
	itersPerNs()
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	bgCtx, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	var bg errgroup.Group
	startChurn(bgCtx, &bg, d, c, c.weightsOrEqual())
	var outs outcomes
	var next atomic.Int64
	start := time.Now()
	reqErr := drive(ctx, c.requesters, cancelWork, func() (bool, error) {
		t := next.Add(1) - 1
		_, err := request(workCtx, d, ws, p, int(t), c.keys)
		if errors.Is(err, errNoWorkerIndex) {
			return false, err
		}
		outs.add(err)
		return true, nil
	})
	elapsed := time.Since(start)
	stopBG()
	churnErr := bg.Wait()
	shutCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	srvErr := srv.Shutdown(shutCtx)
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		srvErr = errors.Join(srvErr, err)
	}
	view.Close()
	if err := errors.Join(reqErr, d.Close(context.Background()), srvErr); err != nil {
		return err
	}
	if churnErr != nil {
		fmt.Fprintf(stderr, "balancer: -churn stopped: %v\n", churnErr)
	}
	n := outs.completed.Load() + outs.errors.Load()
	fmt.Fprintf(stdout, "balancer: stopped after %v: %d requests answered, %d completed, %d errors (%d panics, %d cancelled)\n",
		elapsed.Round(time.Millisecond), n, outs.completed.Load(), outs.errors.Load(), outs.panics.Load(), outs.cancelled.Load())
	return nil
}

// viewURL is the page's address for a browser on this machine: an
// unspecified host (":8080") is reached at localhost.
func viewURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String() + viewPath
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + viewPath
}
