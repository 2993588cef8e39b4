package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/gobalancer/balancer/dispatcher"
	"golang.org/x/sync/errgroup"
)

// The tenants scenario (-scenario tenants): two tenants share one
// dispatcher. "background" keeps it saturated with a single Group of
// -work tasks; "interactive" sends a Group of 3 such tasks every 10ms and
// waits for it. The schedule decides how much the background delays the
// interactive groups:
//
//   - fifo: nothing special, the interactive tasks queue behind the backlog;
//   - priority: the interactive tasks have class dispatcher.MaxPriority;
//   - deadline: each interactive group's context has a 20ms deadline (a
//     group that misses it is cancelled and counted as failed);
//   - fair: the interactive group has Share(4), the background Share(1).
const (
	scenarioTenants = "tenants"

	interactiveEvery    = 10 * time.Millisecond
	interactiveTasks    = 3
	interactiveDeadline = 20 * time.Millisecond
	interactiveShare    = 4
	backgroundShare     = 1

	maxDuration = time.Hour
)

// TenantSummary is one tenant under one schedule, over every round. The
// interactive tenant counts groups of 3 tasks, timed from the group's first
// Go to its Wait's return; the background counts tasks, each timed from
// its Go to the task's end (unit says which).
type TenantSummary struct {
	Name       string  `json:"name"`     // interactive or background
	Schedule   string  `json:"schedule"` // fifo, priority, deadline or fair
	Unit       string  `json:"unit"`     // what completed counts: "group" (of 3 tasks) or "task"
	Completed  int64   `json:"completed"`
	Failed     int64   `json:"failed"`     // interactive groups that failed (under deadline: missed it); 0 for background
	Throughput float64 `json:"throughput"` // completed per second
	P50ms      float64 `json:"p50_ms"`     // completion time, as unit says
	P99ms      float64 `json:"p99_ms"`
	Dispatched int64   `json:"dispatched"` // the tenant's tasks handed to a worker (dispatcher.Stats)
}

// TenantsReport is the -json output of the tenants scenario.
type TenantsReport struct {
	Scenario string `json:"scenario"` // tenants
	Strategy string `json:"strategy"`
	Workers  int    `json:"workers"`
	Settings
	Duration    string          `json:"duration"`    // per schedule, as -duration takes it
	Rounds      int             `json:"rounds"`      // each schedule ran in this many slices of duration/rounds
	Interrupted bool            `json:"interrupted"` // by a signal: the schedules ran less than duration
	Tenants     []TenantSummary `json:"tenants"`     // per schedule in the order of the list: interactive, then background
}

// tenantTally accumulates one tenant under one schedule.
type tenantTally struct {
	hist                          histogram
	completed, failed, dispatched atomic.Int64
}

// scheduleTally is both tenants under one schedule.
type scheduleTally struct {
	interactive, background tenantTally
	elapsed                 time.Duration
}

// runTenants runs the scenario under each schedule of -schedule: with a
// list, in -rounds interleaved slices of -duration/-rounds each (the order
// rotating from round to round, as runRounds does), so that a drift of
// the machine falls on every schedule alike.
func runTenants(ctx context.Context, c *config, stdout, stderr io.Writer) error {
	rounds := 1
	if len(c.schedules) > 1 {
		rounds = c.rounds
	}
	slice := c.duration / time.Duration(rounds)
	tallies := make([]scheduleTally, len(c.schedules))
	interrupted := false
	for r := 0; r < rounds && !interrupted; r++ {
		for k := range c.schedules {
			i := (k + r) % len(c.schedules)
			s := c.setupWith(func(s *setup) { s.schedule = c.schedules[i] })
			if err := tenantsOnce(ctx, c, s, slice, &tallies[i]); err != nil {
				return err
			}
			if ctx.Err() != nil {
				interrupted = true
				break
			}
		}
	}
	rep := &TenantsReport{
		Scenario: scenarioTenants, Strategy: c.strategy, Workers: c.workers,
		Settings: settingsOf(c, c.setupWith(nil)), Duration: c.duration.String(), Rounds: rounds,
		Interrupted: interrupted,
	}
	rep.Settings.Schedule = ""
	for i, sc := range c.schedules {
		t := &tallies[i]
		rep.Tenants = append(rep.Tenants,
			summarize("interactive", sc, "group", &t.interactive, t.elapsed),
			summarize("background", sc, "task", &t.background, t.elapsed))
	}
	var err error
	if c.json {
		err = writeJSON(stdout, rep)
	} else {
		printTenants(stdout, c, rep)
	}
	if err != nil {
		return err
	}
	if interrupted {
		return errInterrupted
	}
	return nil
}

func summarize(name string, sc dispatcher.Schedule, unit string, t *tenantTally, elapsed time.Duration) TenantSummary {
	lat := t.hist.Latency()
	s := TenantSummary{
		Name: name, Schedule: sc.String(), Unit: unit,
		Completed: t.completed.Load(), Failed: t.failed.Load(), Dispatched: t.dispatched.Load(),
		P50ms: float64(lat.P50) / 1e6, P99ms: float64(lat.P99) / 1e6,
	}
	if elapsed > 0 {
		s.Throughput = float64(s.Completed) / elapsed.Seconds()
	}
	return s
}

// tenantsOnce runs both tenants on a fresh dispatcher with setup s for d
// (or until ctx ends) and adds what they did to t. The two tenants are
// one errgroup: they stop together, at the end of the run or at the
// first error of either. Every goroutine it starts has exited when it
// returns.
func tenantsOnce(ctx context.Context, c *config, s setup, d time.Duration, t *scheduleTally) error {
	disp, err := dispatcher.New(dispatcherOptions(c, s)...)
	if err != nil {
		return err
	}
	ws := newWorkers(c, false)
	itersPerNs() // calibrate before the clock starts
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()

	// work is one task of the scenario: -work of CPU at its worker's speed.
	work := func(ctx context.Context) (uint64, error) {
		i, ok := disp.WorkerIndex(ctx)
		if !ok {
			return 0, errNoWorkerIndex
		}
		return spin(ctx, iterations(time.Duration(float64(c.work)/ws.speed(i))), uint64(i))
	}
	start := time.Now()
	g, gctx := errgroup.WithContext(runCtx)
	g.Go(func() error { return background(gctx, disp, s, c, work, &t.background) })
	g.Go(func() error { return interactive(gctx, disp, s, work, &t.interactive) })
	runErr := g.Wait()
	t.elapsed += time.Since(start)
	if err := errors.Join(runErr, disp.Close(context.Background())); err != nil {
		return err
	}
	for _, f := range disp.Stats().Tenants {
		switch f.Name {
		case "interactive":
			t.interactive.dispatched.Add(f.Dispatched)
		case "background":
			t.background.dispatched.Add(f.Dispatched)
		}
	}
	return nil
}

// backgroundInFlight is how many background tasks are submitted and not
// yet finished: twice what the workers' queues hold, so that a backlog
// always waits in the balancer, where the schedule orders it.
func backgroundInFlight(c *config, s setup) int {
	return 2 * c.workers * (s.workerBuffer + 1)
}

// background keeps backgroundInFlight tasks of one Group in flight until
// ctx ends.
func background(ctx context.Context, d *dispatcher.Dispatcher, s setup, c *config,
	work func(context.Context) (uint64, error), t *tenantTally) error {
	opts := []dispatcher.GroupOption{dispatcher.Tenant("background"), dispatcher.CollectErrors()}
	if s.schedule == dispatcher.Fair {
		opts = append(opts, dispatcher.Share(backgroundShare))
	}
	g := dispatcher.NewGroup[uint64](ctx, d, opts...)
	// A token per task in flight, taken before Go and given back when the
	// task ends, so that a task's time starts when it is submitted, not
	// while it waits for room in the tenant's own window.
	tokens := make(chan struct{}, backgroundInFlight(c, s))
	var taskErr atomic.Pointer[error]
loop:
	for ctx.Err() == nil {
		select {
		case tokens <- struct{}{}:
		case <-ctx.Done():
			break loop
		}
		start := time.Now()
		err := g.Go(func(ctx context.Context) (uint64, error) {
			defer func() { <-tokens }()
			x, err := work(ctx)
			switch {
			case err == nil:
				t.hist.Record(time.Since(start).Nanoseconds())
				t.completed.Add(1)
			case errors.Is(err, errNoWorkerIndex):
				taskErr.CompareAndSwap(nil, &err)
			}
			return x, err
		})
		if err != nil { // refused (the run ended): the task will not run
			<-tokens
		}
	}
	_, _ = g.Wait() // the tasks cut short by the end of the run fail: not counted
	if p := taskErr.Load(); p != nil {
		return *p
	}
	return nil
}

// interactive sends a group of interactiveTasks tasks every
// interactiveEvery and waits for it, until ctx ends. A group still running
// at the next tick delays the next one (ticks are dropped, not queued).
func interactive(ctx context.Context, d *dispatcher.Dispatcher, s setup,
	work func(context.Context) (uint64, error), t *tenantTally) error {
	tk := time.NewTicker(interactiveEvery)
	defer tk.Stop()
	for {
		if err := interactiveGroup(ctx, d, s, work, t); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tk.C:
		}
	}
}

func interactiveGroup(ctx context.Context, d *dispatcher.Dispatcher, s setup,
	work func(context.Context) (uint64, error), t *tenantTally) error {
	gctx := ctx
	opts := []dispatcher.GroupOption{dispatcher.Tenant("interactive")}
	switch s.schedule {
	case dispatcher.ByDeadline:
		var cancel context.CancelFunc
		gctx, cancel = context.WithTimeout(ctx, interactiveDeadline)
		defer cancel()
	case dispatcher.Fair:
		opts = append(opts, dispatcher.Share(interactiveShare))
	}
	prio := 0
	if s.schedule == dispatcher.ByPriority {
		prio = dispatcher.MaxPriority
	}
	start := time.Now()
	g := dispatcher.NewGroup[uint64](gctx, d, opts...)
	for range interactiveTasks {
		if g.Priority(prio).Go(work) != nil {
			break // the group failed; Wait says why
		}
	}
	_, err := g.Wait()
	switch {
	case err == nil:
		t.hist.Record(time.Since(start).Nanoseconds())
		t.completed.Add(1)
	case errors.Is(err, errNoWorkerIndex):
		return err
	case ctx.Err() == nil: // not the end of the run: the group's own failure
		t.failed.Add(1)
	}
	return nil
}

func printTenants(w io.Writer, c *config, rep *TenantsReport) {
	s := c.setupWith(nil)
	fmt.Fprintf(w, "tenants scenario: strategy %s, %d workers, work %v per task, %v per schedule",
		c.strategy, c.workers, c.work, c.duration)
	if rep.Rounds > 1 {
		fmt.Fprintf(w, " in %d interleaved rounds", rep.Rounds)
	}
	fmt.Fprintf(w, "\n%s, seed %d\n", rep.Settings.describe(), c.seed)
	fmt.Fprintf(w, "background: one group keeping %d tasks in flight; interactive: a group of %d tasks every %v\n",
		backgroundInFlight(c, s), interactiveTasks, interactiveEvery)
	if p := runtime.GOMAXPROCS(0); c.workers > p {
		fmt.Fprintf(w, "note: %d workers on %d cores (GOMAXPROCS): Go's scheduler time-slices the workers, so it decides what runs as much as the schedule does\n", c.workers, p)
	}
	if rep.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: partial report")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "schedule\ttenant\tcompleted\tfailed\tper s\tp50\tp99\t\n")
	for _, t := range rep.Tenants {
		fmt.Fprintf(tw, "%s\t%s\t%d %ss\t%d\t%.0f\t%s\t%s\t\n", t.Schedule, t.Name, t.Completed, t.Unit, t.Failed,
			t.Throughput, dur(int64(t.P50ms*1e6)), dur(int64(t.P99ms*1e6)))
	}
	tw.Flush()
	fmt.Fprintf(w, "\ncompletion time: interactive, a whole group of %d tasks (first Go to Wait's return); background, each task (Go to its end).\n",
		interactiveTasks)
	fmt.Fprintf(w, "priority: interactive tasks in class %d; deadline: interactive groups due in %v (failed: missed); fair: shares %d:%d.\n",
		dispatcher.MaxPriority, interactiveDeadline, interactiveShare, backgroundShare)
}
