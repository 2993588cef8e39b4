package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/gobalancer/balancer/strategies"
)

// Trace is the -picks output. Its JSON field names are a stable interface:
// scripts depend on them.
type Trace struct {
	Strategy string  `json:"strategy"`
	Weights  []int   `json:"weights"`
	Picks    []int   `json:"picks"`
	Counts   []int   `json:"counts"`
	MaxLag   float64 `json:"max_lag"`
}

// tracePicks asks the strategy for n picks with no worker behind it: no
// request ever completes (Done is never called), so a load-aware strategy
// sees every pick still pending. Pick t carries routing key t mod -keys
// (or t). This is the lua-resty-balancer WRR issue's experiment, for any strategy.
func tracePicks(c *config) (*Trace, error) {
	w := c.weightsOrEqual()
	s, err := strategies.New(c.strategy, w, strategies.WithSeed(c.seed))
	if err != nil {
		return nil, err
	}
	tr := &Trace{Strategy: c.strategy, Weights: w, Picks: make([]int, c.picks), Counts: make([]int, len(w))}
	for t := range tr.Picks {
		i := s.Pick(routeKey(uint64(t), uint64(c.keys)))
		tr.Picks[t] = i
		if i >= 0 && i < len(w) {
			tr.Counts[i]++
		}
	}
	// The strategies package's exact lag: max over members i and prefixes t
	// of |picks_i(t) − t·w_i/W|.
	tr.MaxLag = strategies.MaxLag(w, tr.Picks)
	return tr, nil
}

func runPicks(c *config, stdout io.Writer) error {
	tr, err := tracePicks(c)
	if err != nil {
		return err
	}
	if c.plot != "" {
		order := make([]int32, len(tr.Picks))
		for t, i := range tr.Picks {
			order[t] = int32(i)
		}
		if err := plotRun(c.plot, tr.Weights, order, nil); err != nil {
			return err
		}
	}
	if c.json {
		return writeJSON(stdout, tr)
	}
	for t, i := range tr.Picks {
		fmt.Fprintf(stdout, "pick %d: worker %d (weight %d)\n", t, i, tr.Weights[i])
	}
	W := 0
	for _, x := range tr.Weights {
		W += x
	}
	fmt.Fprintf(stdout, "\n%s over %d picks, max_lag %.3f\n", tr.Strategy, len(tr.Picks), tr.MaxLag)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "worker\tweight\tcount\tshare\tideal\t")
	for i, n := range tr.Counts {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.1f%%\t%.1f%%\t\n", i, tr.Weights[i], n,
			100*float64(n)/float64(len(tr.Picks)), 100*float64(tr.Weights[i])/float64(W))
	}
	tw.Flush()
	if c.plot != "" {
		fmt.Fprintf(stdout, "\nplot written to %s\n", c.plot)
	}
	return nil
}
