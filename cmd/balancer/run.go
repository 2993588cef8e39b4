package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobalancer/balancer/dispatcher"
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
	s := setup{strategy: c.strategy, engine: c.engine, workerBuffer: c.workerBuffer, completion: c.completion}
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
// partial result, marked Interrupted.
func runOnce(ctx context.Context, c *config, p *plan, s setup, stderr io.Writer) (*result, error) {
	d, err := dispatcher.New[uint64](dispatcherOptions(c, s)...)
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

	mon := startMonitor(d, c, s.strategy, &answered, stderr)
	ch := startChurn(d, c, c.weightsOrEqual())
	start := time.Now()
	var wg sync.WaitGroup
	for range c.requesters {
		wg.Go(func() {
			for ctx.Err() == nil {
				t := next.Add(1) - 1
				if t >= int64(c.requests) {
					return
				}
				lat, err := request(workCtx, d, ws, p, int(t), c.keys)
				hist.Record(lat.Nanoseconds())
				outs.add(err)
				answered.Add(1)
			}
		})
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	select {
	case <-allDone:
	case <-ctx.Done():
		select {
		case <-allDone:
		case <-time.After(grace):
			cancelWork() // running tasks see it within microseconds
			<-allDone
		}
	}
	elapsed := time.Since(start)
	ch.stop()
	mon.stop()
	// Every request has been answered; Close only waits for tasks whose
	// requester gave up (cancelled) to notice their context.
	if err := d.Close(context.Background()); err != nil {
		return nil, err
	}
	if ch.err != nil {
		fmt.Fprintf(stderr, "balancer: -churn stopped: %v\n", ch.err)
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
func request(ctx context.Context, d *dispatcher.Dispatcher[uint64], ws *workers, p *plan, t, keys int) (time.Duration, error) {
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
	_, err := d.Key(routeKey(uint64(t), uint64(keys))).Do(ctx, task)
	return time.Since(start), err
}

// churner adds a fresh worker and removes the oldest every -churn.
type churner struct {
	quit, done chan struct{}
	count      int   // workers replaced; read after stop
	err        error // why it stopped early; read after stop
}

func startChurn(d *dispatcher.Dispatcher[uint64], c *config, weights []int) *churner {
	ch := &churner{quit: make(chan struct{}), done: make(chan struct{})}
	if c.churn <= 0 {
		close(ch.done)
		return ch
	}
	go func() {
		defer close(ch.done)
		tk := time.NewTicker(c.churn)
		defer tk.Stop()
		for {
			select {
			case <-ch.quit:
				return
			case <-tk.C:
			}
			// Add before removing, so a live worker always exists. The new
			// worker (index n+count) clones the removed one (index count):
			// same weight here, same speed (workers.speed).
			if _, err := d.AddWorker(weights[ch.count%len(weights)]); err != nil {
				ch.err = err
				return
			}
			if err := d.RemoveWorker(ch.count); err != nil {
				ch.err = err
				return
			}
			ch.count++
		}
	}()
	return ch
}

func (ch *churner) stop() {
	select {
	case <-ch.done:
	default:
		close(ch.quit)
	}
	<-ch.done
}
