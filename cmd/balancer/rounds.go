package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
)

// alpha is the significance level of the rounds' tests.
const alpha = 0.05

// axis is the list a rounds run measures: one setup per value.
type axis struct {
	param  string // in the JSON: worker_buffer, engine, completion_buffer or schedule
	title  string // in the text: worker buffer, engine, completion buffer or schedule
	values []any  // in the JSON: an int, or the engine's name
	setups []setup
}

// axis returns the list of two or more values to measure in rounds, or
// nil; validate has made sure there is at most one.
func (c *config) axis() *axis {
	switch {
	case len(c.workerBuffers) > 1:
		a := &axis{param: "worker_buffer", title: "worker buffer"}
		for _, v := range c.workerBuffers {
			a.add(v, c.setupWith(func(s *setup) { s.workerBuffer = v }))
		}
		return a
	case len(c.engines) > 1:
		a := &axis{param: "engine", title: "engine"}
		for _, e := range c.engines {
			a.add(e.String(), c.setupWith(func(s *setup) { s.engine = e }))
		}
		return a
	case len(c.schedules) > 1:
		a := &axis{param: "schedule", title: "schedule"}
		for _, sc := range c.schedules {
			a.add(sc.String(), c.setupWith(func(s *setup) { s.schedule = sc }))
		}
		return a
	case len(c.completions) > 1:
		a := &axis{param: "completion_buffer", title: "completion buffer"}
		for _, v := range c.completions {
			a.add(v, c.setupWith(func(s *setup) { s.completion = v }))
		}
		return a
	}
	return nil
}

// settings are the knobs the rounds share: the list's own is left out.
func (a *axis) settings(c *config) Settings {
	st := settingsOf(c, a.setups[0])
	switch a.param {
	case "worker_buffer":
		st.WorkerBuffer, st.IntakeBuffer = nil, nil
	case "completion_buffer":
		st.CompletionBuffer = nil
	case "schedule":
		st.Schedule = ""
	case "engine":
		st.Engine, st.CompletionBuffer = "", nil
		for _, s := range a.setups {
			if s.completion >= 0 {
				st.CompletionBuffer = ptr(s.completion) // the channels value's
			}
		}
	}
	return st
}

func (a *axis) add(v any, s setup) {
	a.values = append(a.values, v)
	a.setups = append(a.setups, s)
}

// ValueSummary is one value of the list over the rounds. The first value
// is the baseline: ratio and the tests compare each value with it.
type ValueSummary struct {
	Parameter        string    `json:"parameter"`         // worker_buffer, engine, completion_buffer or schedule
	Value            any       `json:"value"`             // a buffer's size, or the engine's or schedule's name
	Throughputs      []float64 `json:"throughputs_per_s"` // one per round
	P99s             []int64   `json:"p99_ns"`            // one per round
	MedianThroughput float64   `json:"median_throughput_per_s"`
	MedianP99        int64     `json:"median_p99_ns"`
	Ratio            float64   `json:"throughput_ratio"` // median throughput / the baseline's
	PThroughput      float64   `json:"p_throughput"`     // Mann-Whitney U, two-sided
	PP99             float64   `json:"p_p99"`
	Significant      bool      `json:"significant"` // either p below 0.05
}

// RoundsReport is the -json output of a rounds run.
type RoundsReport struct {
	Parameter string `json:"parameter"` // worker_buffer, engine, completion_buffer or schedule
	Strategy  string `json:"strategy"`
	Settings
	Rounds      int            `json:"rounds"`      // completed rounds
	Interrupted bool           `json:"interrupted"` // by a signal: rounds < -rounds
	Values      []ValueSummary `json:"values"`      // in the order of the list; the first is the baseline
}

// runRounds measures each value of the list in interleaved rounds: every
// round runs every value once, the order rotating from round to round, so a
// drift of the machine (other load, heat, the GC) falls on all values alike
// instead of on whichever ran last. A write-up of Pike's balancer compared two sets of runs made
// one after the other; this pairs them in time.
func runRounds(ctx context.Context, c *config, ax *axis, stdout, stderr io.Writer) error {
	vals := ax.values
	p := newPlan(c)
	sums := make([]ValueSummary, len(vals))
	for i, v := range vals {
		sums[i].Parameter, sums[i].Value = ax.param, v
	}
	for r := 0; r < c.rounds && ctx.Err() == nil; r++ {
		for k := range vals {
			i := (k + r) % len(vals)
			res, err := runOnce(ctx, c, p, ax.setups[i], stderr)
			if err != nil {
				return err
			}
			if res.Interrupted {
				break // a partial run would skew its value's sample
			}
			sums[i].Throughputs = append(sums[i].Throughputs, res.Throughput)
			sums[i].P99s = append(sums[i].P99s, res.Latency.P99)
			if c.verbose {
				fmt.Fprintf(stderr, "round %d: %s %v: %.0f req/s, p99 %s\n",
					r+1, ax.title, vals[i], res.Throughput, dur(res.Latency.P99))
			}
		}
	}
	// An interrupt inside a round leaves the values of that round uneven:
	// keep only complete rounds, so that every value has the same sample.
	n := len(sums[0].Throughputs)
	for i := range sums {
		n = min(n, len(sums[i].Throughputs))
	}
	if n == 0 { // interrupted in the first round: nothing to compare
		return errInterruptedEarly
	}
	base := &sums[0]
	for i := range sums {
		s := &sums[i]
		s.Throughputs, s.P99s = s.Throughputs[:n], s.P99s[:n]
		s.MedianThroughput = median(s.Throughputs)
		s.MedianP99 = int64(median(asFloats(s.P99s)))
		s.Ratio = s.MedianThroughput / base.MedianThroughput
		_, s.PThroughput = mannWhitney(s.Throughputs, base.Throughputs)
		_, s.PP99 = mannWhitney(asFloats(s.P99s), asFloats(base.P99s))
		s.Significant = i > 0 && (s.PThroughput < alpha || s.PP99 < alpha)
	}
	if c.json {
		rep := &RoundsReport{Parameter: ax.param, Strategy: c.strategy, Settings: ax.settings(c), Rounds: n,
			Interrupted: n < c.rounds, Values: sums}
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		printRounds(stdout, c, ax, sums)
	}
	if n < c.rounds {
		return errInterrupted
	}
	return nil
}

func printRounds(w io.Writer, c *config, ax *axis, sums []ValueSummary) {
	fmt.Fprintf(w, "%s, %d interleaved rounds: strategy %s, %d requesters, %d workers, %d requests, work %v %s\n",
		ax.title, len(sums[0].Throughputs), c.strategy, c.requesters, c.workers, c.requests, c.work, c.dist)
	if n := len(sums[0].Throughputs); n < c.rounds {
		fmt.Fprintf(w, "INTERRUPTED after %d of %d rounds: partial report\n", n, c.rounds)
	}
	st := ax.settings(c)
	var extra []string
	switch {
	case ax.param == "worker_buffer":
		extra = append(extra, fmt.Sprintf("intake buffer %d × (worker buffer + 1)", c.workers))
	case ax.param == "engine" && st.CompletionBuffer != nil:
		extra = append(extra, fmt.Sprintf("completion buffer %d on channels", *st.CompletionBuffer))
		st.CompletionBuffer = nil
	}
	fmt.Fprintf(w, "%s, seed %d\n\n", st.describe(extra...), c.seed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tmedian req/s\tmedian p99\tratio\tp (req/s)\tp (p99)\tverdict\t\n", ax.title)
	for i, s := range sums {
		verdict := "baseline"
		if i > 0 {
			verdict = "within noise"
			if s.Significant {
				verdict = "SIGNIFICANT"
			}
		}
		pt, pp := "-", "-"
		if i > 0 {
			pt, pp = fmt.Sprintf("%.3f", s.PThroughput), fmt.Sprintf("%.3f", s.PP99)
		}
		fmt.Fprintf(tw, "%v\t%.0f\t%s\t%.3f\t%s\t%s\t%s\t\n", s.Value, s.MedianThroughput,
			dur(s.MedianP99), s.Ratio, pt, pp, verdict)
	}
	tw.Flush()
	fmt.Fprintf(w, "\np: two-sided Mann-Whitney U against %s %v over the rounds; significant if p < %.2f.\n",
		ax.title, sums[0].Value, alpha)
	if n := len(sums[0].Throughputs); n < 4 {
		fmt.Fprintf(w, "note: with %d rounds no difference can reach p < %.2f; use -rounds 5 or more.\n", n, alpha)
	}
}

func asFloats(xs []int64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}
