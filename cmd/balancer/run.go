package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/gobalancer/balancer/dispatcher"
	"golang.org/x/sync/errgroup"
)

// grace is how long an interrupted run lets in-flight requests finish
// before it cancels them: long enough for ordinary work to drain, short
// enough that Ctrl-C feels prompt.
const grace = 500 * time.Millisecond

// result is one run: the report and what the plot and -v need besides.
type result struct {
	Report
	speeds   []float64   // per worker index, added workers included
	cum      *cumulative // picks per worker (only with -plot)
	samples  []sample    // pending per worker over time (only with -plot)
	replaced int         // workers replaced by -churn
}

// outcomes counts the answers by kind, as the requesters receive them.
type outcomes struct{ completed, errors, panics, cancelled atomic.Int64 }

func (o *outcomes) add(err error) {
	switch {
	case err == nil:
		o.completed.Add(1)
	case errors.Is(err, dispatcher.ErrTaskPanicked):
		o.errors.Add(1)
		o.panics.Add(1)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		o.errors.Add(1)
		o.cancelled.Add(1)
	default:
		o.errors.Add(1)
	}
}

// setup is what may differ between the runs of one invocation: a row of
// -compare changes the strategy, a value of a rounds list one of the rest.
type setup struct {
	strategy     string
	engine       dispatcher.Engine
	schedule     dispatcher.Schedule
	workerBuffer int
	completion   int // the completion channel's capacity; -1 on the rings engine, which has none
	intake       int
}

// setupWith is the single run's setup (the first value of every list),
// changed by vary (nil: unchanged), with the buffers the dispatcher would
// default filled in: runOnce passes them explicitly, so that the report
// states the capacities the run used rather than a copy of the
// dispatcher's defaults that could drift from them.
func (c *config) setupWith(vary func(*setup)) setup {
	s := setup{strategy: c.strategy, engine: c.engine, schedule: c.schedule, workerBuffer: c.workerBuffer, completion: c.completion}
	if vary != nil {
		vary(&s)
	}
	switch {
	case s.engine != dispatcher.Channels:
		s.completion = -1
	case s.completion < 0:
		s.completion = c.workers * (s.workerBuffer + 1) // WithCompletionBuffer's default: a slot per pending request
	}
	s.intake = c.workers * (s.workerBuffer + 1) // WithIntakeBuffer's default
	return s
}

// runOnce runs the workload once with setup s. Every goroutine it starts
// has exited when it returns. If ctx ends, it stops taking new requests,
// lets in-flight ones drain for grace, then cancels them, and returns the
// partial result, marked Interrupted. A requester's error (see drive) ends
// the run the same way, but runOnce returns that error and no result.
func runOnce(ctx context.Context, c *config, p *plan, s setup, stderr io.Writer) (*result, error) {
	d, err := dispatcher.New(dispatcherOptions(c, s)...)
	if err != nil {
		return nil, err
	}
	ws := newWorkers(c, c.plot != "")
	itersPerNs() // calibrate before the clock starts

	// Bounded whatever -requests is: a histogram and four counters, not a
	// sample per request.
	var hist histogram
	var outs outcomes
	var next, answered atomic.Int64
	// Requests run under workCtx, not ctx: an interrupt stops intake at
	// once but gives in-flight requests the grace period to finish.
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()

	// The live view and the churn run beside the requesters in one group:
	// a single cancel stops both once the requesters are done, and Wait
	// returns the churn's error (the view has none). That error stops the
	// churn alone; the run goes on and says so after.
	bgCtx, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	var bg errgroup.Group
	mon := startMonitor(bgCtx, &bg, d, c, s.strategy, &answered, stderr)
	ch := startChurn(bgCtx, &bg, d, c, c.weightsOrEqual())
	start := time.Now()
	reqErr := drive(ctx, c.requesters, cancelWork, func() (bool, error) {
		t := next.Add(1) - 1
		if t >= int64(c.requests) {
			return false, nil
		}
		lat, err := request(workCtx, d, ws, p, int(t), c.keys)
		if errors.Is(err, errNoWorkerIndex) {
			// The demo's own fault, not one of the workload's faults: the
			// task ran at no known worker's speed and -plot missed it, so
			// it is not counted among the errors as if it were.
			return false, err
		}
		hist.Record(lat.Nanoseconds())
		outs.add(err)
		answered.Add(1)
		return true, nil
	})
	elapsed := time.Since(start)
	stopBG()
	churnErr := bg.Wait()
	// Every request has been answered; Close only waits for tasks whose
	// requester gave up (cancelled) to notice their context.
	if err := errors.Join(reqErr, d.Close(context.Background())); err != nil {
		return nil, err
	}
	if churnErr != nil {
		fmt.Fprintf(stderr, "balancer: -churn stopped: %v\n", churnErr)
	}
	st := d.Stats()
	res := &result{
		Report:   buildReport(c, s, &hist, &outs, elapsed, st),
		speeds:   ws.speeds(len(st.Workers)),
		cum:      ws.cum,
		samples:  mon.samples,
		replaced: ch.count,
	}
	return res, nil
}

// drive runs n requesters, each calling take until it reports that no
// request is left, returns an error, or ctx ends. They are one errgroup:
// the first error stops every requester's intake, as an interrupt does,
// and is returned. Once intake has stopped early, whether by ctx or by an
// error, the requests in flight have grace to finish; then cancelWork
// cancels them. Every requester has returned when drive does.
func drive(ctx context.Context, n int, cancelWork context.CancelFunc, take func() (more bool, err error)) error {
	g, gctx := errgroup.WithContext(ctx)
	for range n {
		g.Go(func() error {
			for gctx.Err() == nil {
				if more, err := take(); err != nil || !more {
					return err
				}
			}
			return nil
		})
	}
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()
	select {
	case err := <-done:
		return err
	case <-gctx.Done(): // also closed by Wait itself: then done follows at once
	}
	select {
	case err := <-done:
		return err
	case <-time.After(grace):
		cancelWork() // running tasks see it within microseconds
		return <-done
	}
}

// errNoWorkerIndex: a task's context did not carry its worker's index,
// which the demo's dispatcher is built to give (dispatcherOptions).
var errNoWorkerIndex = errors.New("the task's context has no worker index")

// routeKey is the routing key of request t: t mod -keys, or t.
func routeKey(t, keys uint64) uint64 {
	if keys == 0 {
		return t
	}
	return t % keys
}

// request submits request t and waits for its answer, with its context
// cancelled as the plan says.
func request(ctx context.Context, d *dispatcher.Dispatcher, ws *workers, p *plan, t, keys int) (time.Duration, error) {
	work, panics, after := p.at(t)
	if after >= 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		if after == 0 {
			cancel()
		} else {
			tm := time.AfterFunc(after, cancel)
			defer tm.Stop()
		}
	}
	task := func(ctx context.Context) (uint64, error) {
		i, ok := d.WorkerIndex(ctx)
		if !ok {
			return 0, errNoWorkerIndex
		}
		ws.ran(i)
		x, err := spin(ctx, iterations(time.Duration(float64(work)/ws.speed(i))), uint64(t))
		if err != nil {
			return 0, err
		}
		if panics {
			panic(fmt.Sprintf("injected panic (request %d)", t))
		}
		return x, nil
	}
	start := time.Now()
	_, err := dispatcher.Do(ctx, d.Key(routeKey(uint64(t), uint64(keys))), task)
	return time.Since(start), err
}

// churner adds a fresh worker and removes the oldest every -churn.
type churner struct {
	count int // workers replaced; read after the group's Wait
}

// startChurn runs the churn in g until ctx ends. An error of AddWorker or
// RemoveWorker stops it and is g's error.
func startChurn(ctx context.Context, g *errgroup.Group, d *dispatcher.Dispatcher, c *config, weights []int) *churner {
	ch := &churner{}
	if c.churn <= 0 {
		return ch
	}
	g.Go(func() error {
		tk := time.NewTicker(c.churn)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-tk.C:
			}
			// Add before removing, so a live worker always exists. The new
			// worker (index n+count) clones the removed one (index count):
			// same weight here, same speed (workers.speed).
			if _, err := d.AddWorker(weights[ch.count%len(weights)]); err != nil {
				return err
			}
			if err := d.RemoveWorker(ch.count); err != nil {
				return err
			}
			ch.count++
		}
	})
	return ch
}
