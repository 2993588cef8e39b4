package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
)

// runCompare runs the same workload (one plan, one seed) under each
// strategy of -compare, one after the other, and prints one row each, or a
// JSON array of the reports. An interrupt ends the comparison after the
// partial run, whose row is marked.
func runCompare(ctx context.Context, c *config, stdout, stderr io.Writer) error {
	p := newPlan(c)
	var results []*result
	for _, name := range c.compare {
		if ctx.Err() != nil {
			break
		}
		res, err := runOnce(ctx, c, p, c.setupWith(func(s *setup) { s.strategy = name }), stderr)
		if err != nil {
			return err
		}
		results = append(results, res)
	}
	if len(results) == 0 {
		return errInterruptedEarly
	}
	if c.json {
		reports := make([]*Report, len(results))
		for i, r := range results {
			reports[i] = &r.Report
		}
		if err := writeJSON(stdout, reports); err != nil {
			return err
		}
	} else {
		printCompare(stdout, c, results)
	}
	if len(results) < len(c.compare) || results[len(results)-1].Interrupted {
		return errInterrupted
	}
	return nil
}

func printCompare(w io.Writer, c *config, results []*result) {
	fmt.Fprintf(w, "%d requesters, %d workers, %d requests, work %v %s, seed %d, weights %v, speeds %v\n",
		c.requesters, c.workers, c.requests, c.work, c.dist, c.seed, c.weightsOrEqual(), c.speedsOrOne())
	if len(results) > 0 {
		fmt.Fprintln(w, results[0].describe())
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\treq/s\tp50\tp99\tshare err\tpending sd\terrors\t")
	for _, r := range results {
		name := r.Strategy
		if r.Interrupted {
			name += " (interrupted)"
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%.1f%%\t%.2f\t%d\t\n", name, r.Throughput,
			dur(r.Latency.P50), dur(r.Latency.P99), 100*r.shareError(), r.Pending.StdDev, r.Errors)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nshare err: the largest gap between a worker's share of the work and its weight's share.")
}
