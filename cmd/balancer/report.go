package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gobalancer/balancer/dispatcher"
)

// Report is the run's report. Its JSON field names are a stable interface:
// scripts depend on them.
type Report struct {
	Strategy   string `json:"strategy"`
	Requesters int    `json:"requesters"`
	Workers    int    `json:"workers"`
	Settings
	Requests    int      `json:"requests"`    // asked for (-requests)
	Interrupted bool     `json:"interrupted"` // by a signal: then completed + errors < requests
	Completed   int      `json:"completed"`   // answered with a value
	Errors      int      `json:"errors"`      // answered with an error: completed + errors == requests unless interrupted
	Panics      int      `json:"panics"`      // errors whose task panicked
	Cancelled   int      `json:"cancelled"`   // errors that are the request context's error
	ElapsedNS   int64    `json:"elapsed_ns"`
	Throughput  float64  `json:"throughput_per_s"` // requests answered per second
	Latency     Latency  `json:"latency_ns"`       // submit to answer, every answered request
	Pending     Pending  `json:"pending"`
	PerWorker   []Worker `json:"per_worker"`
	// RetiredCompleted: requests run by removed workers whose index a later
	// worker took (-churn reuses drained workers' indices); per_worker
	// shows the worker holding each index at the end.
	RetiredCompleted int64 `json:"retired_completed,omitempty"`
}

// Settings are the knobs of a run besides the strategy and the counts. A
// report has all but completion_buffer, which only the channel engine has.
// A rounds report leaves out what its list varies (and intake_buffer for
// a -worker-buffer list: it follows the worker buffer).
type Settings struct {
	Engine           string `json:"engine,omitempty"`
	Schedule         string `json:"schedule,omitempty"` // the balancer's: fifo, priority, deadline or fair
	WorkerBuffer     *int   `json:"worker_buffer,omitempty"`
	CompletionBuffer *int   `json:"completion_buffer,omitempty"` // the channel engine's; in an -engine list, its channels value's
	IntakeBuffer     *int   `json:"intake_buffer,omitempty"`
	Seed             uint64 `json:"seed"`
	Work             string `json:"work"` // as -work takes it, e.g. "100µs"
	Dist             string `json:"dist"`
}

func settingsOf(c *config, s setup) Settings {
	st := Settings{
		Engine: s.engine.String(), Schedule: s.schedule.String(), WorkerBuffer: ptr(s.workerBuffer), IntakeBuffer: ptr(s.intake),
		Seed: c.seed, Work: c.work.String(), Dist: c.dist,
	}
	if s.completion >= 0 {
		st.CompletionBuffer = ptr(s.completion)
	}
	return st
}

func ptr(v int) *int { return &v }

// describe names the engine and the buffers for a text header.
func (st *Settings) describe(extra ...string) string {
	var parts []string
	if st.Engine != "" {
		parts = append(parts, "engine "+st.Engine)
	}
	// The default schedule goes unsaid, so that the header reads as it did
	// before there were schedules.
	if st.Schedule != "" && st.Schedule != dispatcher.DefaultSchedule.String() {
		parts = append(parts, "schedule "+st.Schedule)
	}
	for _, b := range []struct {
		name string
		v    *int
	}{{"worker buffer", st.WorkerBuffer}, {"completion buffer", st.CompletionBuffer}, {"intake buffer", st.IntakeBuffer}} {
		if b.v != nil {
			parts = append(parts, fmt.Sprintf("%s %d", b.name, *b.v))
		}
	}
	return strings.Join(append(parts, extra...), ", ")
}

// Latency holds nearest-rank percentiles of every answered request's
// latency, in nanoseconds, read from a histogram: within 0.4% of the exact
// value (see histogram); max is exact.
type Latency struct {
	P50 int64 `json:"p50"`
	P90 int64 `json:"p90"`
	P99 int64 `json:"p99"`
	Max int64 `json:"max"`
}

// Pending is Pike's figure: the mean and standard deviation of pending
// requests across workers, averaged over every balancer event of the run.
type Pending struct {
	Mean   float64 `json:"mean"`
	StdDev float64 `json:"stddev"`
}

// Worker is one worker's line. Completed counts every request the worker
// finished, panicked ones included; share is its part of all of those.
type Worker struct {
	Index      int     `json:"index"`
	Weight     int     `json:"weight"`
	Completed  int64   `json:"completed"`
	Share      float64 `json:"share"`
	MaxPending int     `json:"max_pending"`
	removed    bool
}

func buildReport(c *config, s setup, h *histogram, o *outcomes, elapsed time.Duration, st dispatcher.Stats) Report {
	r := Report{
		Strategy: s.strategy, Requesters: c.requesters, Workers: c.workers, Requests: c.requests,
		Settings:  settingsOf(c, s),
		Completed: int(o.completed.Load()), Errors: int(o.errors.Load()),
		Panics: int(o.panics.Load()), Cancelled: int(o.cancelled.Load()),
		ElapsedNS: elapsed.Nanoseconds(),
		Latency:   h.Latency(),
		Pending:   Pending{Mean: st.RunPendingMean, StdDev: st.RunPendingStdDev},
	}
	r.Interrupted = r.answered() < r.Requests
	if elapsed > 0 {
		r.Throughput = float64(r.answered()) / elapsed.Seconds()
	}
	r.RetiredCompleted = st.RetiredCompleted
	var total int64
	for _, w := range st.Workers {
		total += w.Completed
	}
	for _, w := range st.Workers {
		pw := Worker{Index: w.Index, Weight: w.Weight, Completed: w.Completed, MaxPending: w.MaxPending, removed: w.Removed}
		if total > 0 {
			pw.Share = float64(w.Completed) / float64(total)
		}
		r.PerWorker = append(r.PerWorker, pw)
	}
	return r
}

// answered is the requests that got an answer, a value or an error.
func (r *Report) answered() int { return r.Completed + r.Errors }

// shareError is the largest gap, over live workers, between a worker's share
// and its weight's share: how far the strategy strayed from the weights
// (load-aware strategies stray on purpose when workers differ in speed).
func (r *Report) shareError() float64 {
	var W int
	for _, w := range r.PerWorker {
		W += w.Weight
	}
	var e float64
	for _, w := range r.PerWorker {
		if W > 0 {
			e = max(e, abs(w.Share-float64(w.Weight)/float64(W)))
		}
	}
	return e
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func writeJSON(w io.Writer, v any) error {
	// One line: one object (or array) per run, ready for jq and scripts.
	return json.NewEncoder(w).Encode(v)
}

// printReport writes the human-readable report.
func printReport(w io.Writer, c *config, res *result) {
	r := &res.Report
	fmt.Fprintf(w, "strategy %s: %d requesters, %d workers, %d requests, work %v %s, seed %d\n",
		r.Strategy, r.Requesters, r.Workers, r.Requests, c.work, c.dist, c.seed)
	fmt.Fprintln(w, r.describe())
	if r.Interrupted {
		fmt.Fprintf(w, "INTERRUPTED after %d of %d requests: partial report\n", r.answered(), r.Requests)
	}
	fmt.Fprintf(w, "elapsed %v, throughput %.0f req/s\n", time.Duration(r.ElapsedNS).Round(time.Millisecond), r.Throughput)
	fmt.Fprintf(w, "answers: %d completed, %d errors (%d panics, %d cancelled)\n", r.Completed, r.Errors, r.Panics, r.Cancelled)
	fmt.Fprintf(w, "latency: p50 %v  p90 %v  p99 %v  max %v\n",
		dur(r.Latency.P50), dur(r.Latency.P90), dur(r.Latency.P99), dur(r.Latency.Max))
	fmt.Fprintf(w, "pending over the run (Pike): mean %.2f, stddev %.2f\n", r.Pending.Mean, r.Pending.StdDev)
	if res.replaced > 0 {
		fmt.Fprintf(w, "churn: %d workers replaced\n", res.replaced)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "worker\tweight\tspeed\tcompleted\tshare\tmax pending\t")
	summarised := eachRow(len(r.PerWorker), c.all, func(i int) {
		pw := r.PerWorker[i]
		note := ""
		if pw.removed {
			note = " (removed)"
		}
		fmt.Fprintf(tw, "%d\t%d\t%g\t%d\t%.1f%%\t%d\t%s\n", pw.Index, pw.Weight, speedAt(res.speeds, pw.Index),
			pw.Completed, 100*pw.Share, pw.MaxPending, note)
	}, func(omitted int) {
		fmt.Fprintf(tw, "…\t\t\t\t\t\t %d workers not shown (-all shows every row)\n", omitted)
	})
	if summarised {
		var weight, maxPending int
		var done int64
		for _, pw := range r.PerWorker {
			weight += pw.Weight
			done += pw.Completed
			maxPending = max(maxPending, pw.MaxPending)
		}
		fmt.Fprintf(tw, "all %d\t%d\t\t%d\t100%%\t%d\t\n", len(r.PerWorker), weight, done, maxPending)
	}
	tw.Flush()
}

func speedAt(s []float64, i int) float64 {
	if i < len(s) {
		return s[i]
	}
	return 1
}

// dur rounds a latency for reading: three significant digits or so.
func dur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d >= time.Microsecond:
		return d.Round(time.Microsecond / 10).String()
	}
	return d.String()
}

// runSingle is the default mode: one run, its report, and the plot.
func runSingle(ctx context.Context, c *config, stdout, stderr io.Writer) error {
	res, err := runOnce(ctx, c, newPlan(c), c.setupWith(nil), stderr)
	if err != nil {
		return err
	}
	if c.json {
		err = writeJSON(stdout, &res.Report)
	} else {
		printReport(stdout, c, res)
	}
	if err != nil {
		return err
	}
	if c.plot != "" {
		if err := writePlot(c, stdout, stderr, res.cum, res.samples, res.Interrupted); err != nil {
			return err
		}
	}
	if res.Interrupted {
		return errInterrupted
	}
	return nil
}

// writePlot writes -plot, that of the partial run after an interrupt, and
// says so on stdout (stderr with -json, whose stdout is the JSON alone);
// with no pick at all, it writes nothing and says that instead.
func writePlot(c *config, stdout, stderr io.Writer, cum *cumulative, samples []sample, interrupted bool) error {
	if cum.t == 0 {
		fmt.Fprintf(stderr, "balancer: no pick was made: no plot written to %s\n", c.plot)
		return nil
	}
	if err := plotRun(c.plot, c.weightsOrEqual(), cum, samples); err != nil {
		return err
	}
	what := "plot"
	if interrupted {
		what = "plot of the partial run"
	}
	if !c.json {
		fmt.Fprintf(stdout, "\n%s written to %s\n", what, c.plot)
	} else if interrupted {
		fmt.Fprintf(stderr, "balancer: %s written to %s\n", what, c.plot)
	}
	return nil
}
