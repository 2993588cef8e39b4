package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/gobalancer/balancer/internal/lag"
	"github.com/gobalancer/balancer/strategies"
)

// maxPicks bounds -picks: the trace is held whole, for max_lag and the
// JSON, which at 10^7 picks is already about 20 MB.
const maxPicks = 10_000_000

// Trace is the -picks output. Its JSON field names are a stable interface:
// scripts depend on them.
type Trace struct {
	Strategy    string  `json:"strategy"`
	Weights     []int   `json:"weights"`
	Picks       []int   `json:"picks"` // every pick made: len(picks) < -picks only when interrupted
	Counts      []int   `json:"counts"`
	MaxLag      float64 `json:"max_lag"`
	Interrupted bool    `json:"interrupted"`
}

// pickCheck is how many picks run between looks at the context: a few
// hundred microseconds of the slowest strategy, so an interrupt is prompt.
const pickCheck = 4096

// tracePicks asks the strategy for n picks with no worker behind it: no
// request ever completes (Done is never called), so a load-aware strategy
// sees every pick still pending. Pick t carries routing key t mod -keys
// (or t). This is the lua-resty-balancer WRR issue's experiment, for any
// strategy. If ctx ends it stops, after at least one batch of picks, and
// marks the trace.
func tracePicks(ctx context.Context, c *config) (*Trace, error) {
	w := c.weightsOrEqual()
	s, err := strategies.New(c.strategy, w, strategies.WithSeed(c.seed))
	if err != nil {
		return nil, err
	}
	tr := &Trace{Strategy: c.strategy, Weights: w, Picks: make([]int, 0, c.picks), Counts: make([]int, len(w))}
	for t := range c.picks {
		if t > 0 && t%pickCheck == 0 && ctx.Err() != nil {
			tr.Interrupted = true
			break
		}
		i := s.Pick(routeKey(uint64(t), uint64(c.keys)))
		tr.Picks = append(tr.Picks, i)
		if i >= 0 && i < len(w) {
			tr.Counts[i]++
		}
	}
	// The exact lag the strategies' tests measure: max over members i and
	// prefixes t of |picks_i(t) − t·w_i/W|.
	tr.MaxLag = lag.Max(w, tr.Picks)
	return tr, nil
}

func runPicks(ctx context.Context, c *config, stdout, stderr io.Writer) error {
	tr, err := tracePicks(ctx, c)
	if err != nil {
		return err
	}
	if c.json {
		err = writeJSON(stdout, tr)
	} else {
		printPicks(stdout, c, tr)
	}
	if err != nil {
		return err
	}
	if c.plot != "" {
		cum := &cumulative{}
		for _, i := range tr.Picks {
			cum.add(i)
		}
		if err := writePlot(c, stdout, stderr, cum, nil, tr.Interrupted); err != nil {
			return err
		}
	}
	if tr.Interrupted {
		return errInterrupted
	}
	return nil
}

func printPicks(w io.Writer, c *config, tr *Trace) {
	n := len(tr.Picks)
	if tr.Interrupted {
		fmt.Fprintf(w, "INTERRUPTED after %d of %d picks: partial trace\n", n, c.picks)
	}
	eachRow(n, c.all, func(t int) {
		fmt.Fprintf(w, "pick %d: worker %d (weight %d)\n", t, tr.Picks[t], tr.Weights[tr.Picks[t]])
	}, func(omitted int) {
		fmt.Fprintf(w, "… %d picks not shown (-all prints every one)\n", omitted)
	})
	W := 0
	for _, x := range tr.Weights {
		W += x
	}
	fmt.Fprintf(w, "\n%s over %d picks, max_lag %.3f\n", tr.Strategy, n, tr.MaxLag)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "worker\tweight\tcount\tshare\tideal\t")
	summarised := eachRow(len(tr.Counts), c.all, func(i int) {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.1f%%\t%.1f%%\t\n", i, tr.Weights[i], tr.Counts[i],
			100*float64(tr.Counts[i])/float64(max(n, 1)), 100*float64(tr.Weights[i])/float64(W))
	}, func(omitted int) {
		fmt.Fprintf(tw, "…\t\t\t\t\t %d workers not shown (-all shows every row)\n", omitted)
	})
	if summarised {
		fmt.Fprintf(tw, "all %d\t%d\t%d\t100%%\t100%%\t\n", len(tr.Counts), W, n)
	}
	tw.Flush()
}
