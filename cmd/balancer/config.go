package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
)

// config is every flag, validated. Lists are parsed; nil means "not given".
type config struct {
	requesters, workers, requests int
	strategy                      string
	weights                       []int
	speeds                        []float64
	workerBuffer                  int                   // the first of workerBuffers: the single run's value
	workerBuffers                 []int                 // -worker-buffer; two or more values run rounds
	engine                        dispatcher.Engine     // the first of engines
	engines                       []dispatcher.Engine   // -engine; two or more values run rounds
	completion                    int                   // the first of completions; -1: not given
	completions                   []int                 // -completion-buffer (channel engine only); nil: not given
	schedule                      dispatcher.Schedule   // the first of schedules
	schedules                     []dispatcher.Schedule // -schedule; two or more values run rounds
	scenario                      string                // -scenario: "" (the requesters) or "tenants"
	duration                      time.Duration         // -duration: the tenants scenario's run per schedule
	work                          time.Duration
	dist                          string
	seed                          uint64
	picks, keys                   int
	json, verbose, all            bool
	panicRate, cancelRate         float64
	churn                         time.Duration
	compare                       []string
	rounds                        int
	plot                          string
	progress                      bool   // a progress bar on stderr (if it is a terminal)
	serve                         string // -serve ADDR: the live view, until Ctrl-C (serve.go)
}

// errHelp: -h was asked for and the usage was printed.
var errHelp = errors.New("help requested")

// Defaults: a run of a second or two on 2 cores that shows Pike's figure.
const (
	defRequesters = 64
	defWorkers    = 8
	defRequests   = 10000
	defWork       = 100 * time.Microsecond
	defRounds     = 5
	defDuration   = time.Second // the tenants scenario's, per schedule
)

// parseConfig parses args with the standard flag package. Errors are one
// line, without the usage text, so that a script sees exactly what is wrong.
func parseConfig(args []string, stderr io.Writer) (*config, error) {
	c := &config{progress: true}
	fs := flag.NewFlagSet("balancer", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // we print the one-line error ourselves
	fs.IntVar(&c.requesters, "requesters", defRequesters, fmt.Sprintf("requester goroutines, at most %d; each waits for its answer before its next request (Pike's demo)", maxRequesters))
	fs.IntVar(&c.workers, "workers", defWorkers, fmt.Sprintf("worker goroutines, at most %d (implied by -weights; -scenario tenants: GOMAXPROCS by default)", dispatcher.MaxWorkers))
	// Pike's names, so that his demo's command lines run unchanged.
	nRequester := fs.Int("nRequester", defRequesters, "alias of -requesters (Pike's name)")
	nWorker := fs.Int("nWorker", defWorkers, "alias of -workers (Pike's name)")
	fs.IntVar(&c.requests, "requests", defRequests, "total requests, at most 2^48 (the report's memory does not grow with it)")
	fs.StringVar(&c.strategy, "strategy", strategies.Default, "strategy, one of: "+strings.Join(strategies.Names(), ", "))
	weights := fs.String("weights", "", "worker weights, e.g. 100,100,66 (sets -workers to their count; default all 1)")
	speeds := fs.String("speeds", "", "relative worker speeds from 0.01 to 10^6, e.g. 1,1,0.5: a request costs -work/speed of CPU\non that worker (default all 1)")
	workerBuffer := fs.String("worker-buffer", "16", "requests that may wait in each worker's queue behind the one it runs, below 2^20\n(and all queues together at most 2^20); the demo's default, 16, is not the\nlibrary's (63); a list such as 0,15,63 measures each value in interleaved -rounds")
	engine := fs.String("engine", dispatcher.DefaultEngine.String(), "how requests travel to the workers and back: channels (Pike's design: a request\nchannel, a channel per worker, a completion channel) or rings; a list such as\nchannels,rings measures each in interleaved -rounds")
	completion := fs.String("completion-buffer", "", "capacity of the channel engine's completion channel (needs -engine channels;\n0: unbuffered, as in Pike's design; default: workers × (worker buffer + 1), a slot per\npending request); a list such as 0,64 measures each value in interleaved -rounds")
	schedule := fs.String("schedule", dispatcher.DefaultSchedule.String(), "what the balancer hands out next: fifo, priority, deadline or fair; a list such as\nfifo,fair measures each in interleaved -rounds (with -scenario tenants: one report\nline per tenant per schedule)")
	fs.StringVar(&c.scenario, "scenario", "", "a built-in workload instead of the requesters: tenants (a saturating background\ngroup and an interactive tenant sending a group of 3 tasks every 10ms; see -schedule)")
	fs.DurationVar(&c.duration, "duration", defDuration, "with -scenario tenants: how long each schedule runs (a list's rounds share it)")
	fs.DurationVar(&c.work, "work", defWork, "mean CPU work per request, at most 1s (a busy loop, not a sleep)")
	fs.StringVar(&c.dist, "dist", "exp", "distribution of the work: const, uniform (0 to 2×work) or exp")
	seed := fs.Uint64("seed", 1, "seed of the workload, the faults and the strategy: same seed, same run")
	fs.IntVar(&c.picks, "picks", 0, "no workers: print the strategy's first N picks (at most 10^7), counts, shares and max_lag")
	fs.IntVar(&c.keys, "keys", 0, "routing keys: request t carries key t mod K (0: every request its own key t)")
	fs.BoolVar(&c.json, "json", false, "print the report (or trace) as JSON on stdout")
	fs.BoolVar(&c.all, "all", false, fmt.Sprintf("print every row of the per-worker and -picks tables (beyond %d rows they show\nthe first and last rows and the totals)", maxRows))
	fs.BoolVar(&c.verbose, "v", false, "print Pike's load lines (each worker's pending, mean, stddev) on stderr a few times a second")
	fs.Float64Var(&c.panicRate, "panic-rate", 0, "fraction of tasks that panic (after their work)")
	fs.Float64Var(&c.cancelRate, "cancel-rate", 0, "fraction of requests whose context is cancelled, at a random time within the mean work")
	fs.DurationVar(&c.churn, "churn", 0, "every DUR, add a fresh worker and remove the oldest while requests flow (0: off)")
	cmp := fs.String("compare", "", "run the same workload under each strategy of a list, e.g. least-pending,round-robin,p2c")
	fs.IntVar(&c.rounds, "rounds", defRounds, "rounds per value of a -worker-buffer, -engine or -completion-buffer list")
	fs.StringVar(&c.serve, "serve", "", serveFlag)
	fs.StringVar(&c.plot, "plot", "", "write a PNG: cumulative picks per worker against the ideal line, and pending per worker over time\n(checked writable before the run; after an interrupt, the partial run's)")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(fs, stderr)
			return nil, errHelp
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	c.seed = *seed
	for _, a := range []struct {
		alias, name string
		v, dst      *int
	}{{"nRequester", "requesters", nRequester, &c.requesters}, {"nWorker", "workers", nWorker, &c.workers}} {
		if !set[a.alias] {
			continue
		}
		if set[a.name] && *a.v != *a.dst {
			return nil, fmt.Errorf("-%s %d contradicts -%s %d: they are the same flag", a.alias, *a.v, a.name, *a.dst)
		}
		*a.dst = *a.v
	}

	var err error
	if c.weights, err = parseInts("-weights", *weights); err != nil {
		return nil, err
	}
	if c.speeds, err = parseFloats("-speeds", *speeds); err != nil {
		return nil, err
	}
	if c.workerBuffers, err = parseInts("-worker-buffer", *workerBuffer); err != nil {
		return nil, err
	}
	if c.workerBuffers == nil {
		return nil, errors.New("-worker-buffer needs a value, e.g. 16 or 0,15,63")
	}
	c.workerBuffer = c.workerBuffers[0]
	if c.engines, err = parseEngines(*engine); err != nil {
		return nil, err
	}
	c.engine = c.engines[0]
	if c.completions, err = parseInts("-completion-buffer", *completion); err != nil {
		return nil, err
	}
	c.completion = -1
	if c.completions != nil {
		c.completion = c.completions[0]
	}
	if c.schedules, err = parseSchedules(*schedule); err != nil {
		return nil, err
	}
	c.schedule = c.schedules[0]
	if c.compare, err = parseNames(*cmp); err != nil {
		return nil, err
	}
	if c.weights != nil {
		if (set["workers"] || set["nWorker"]) && c.workers != len(c.weights) {
			return nil, fmt.Errorf("%s %d contradicts the %d weights of -weights", spelled(set, "workers", "nWorker"),
				c.workers, len(c.weights))
		}
		c.workers = len(c.weights)
	}
	if err := c.validate(set); err != nil {
		return nil, err
	}
	// Last, as the only check that touches the file system.
	return c, checkPlotPath(c.plot)
}

// validate checks ranges and combinations; set holds the flags given.
func (c *config) validate(set map[string]bool) error {
	positive := []struct {
		name string
		v    int
	}{{spelled(set, "requesters", "nRequester"), c.requesters}, {spelled(set, "workers", "nWorker"), c.workers},
		{"-requests", c.requests}, {"-rounds", c.rounds}}
	for _, p := range positive {
		if p.v < 1 {
			return fmt.Errorf("%s must be positive, got %d", p.name, p.v)
		}
	}
	nonNeg := []struct {
		name string
		v    int
	}{{"-picks", c.picks}, {"-keys", c.keys}}
	for _, p := range nonNeg {
		if p.v < 0 {
			return fmt.Errorf("%s must be >= 0, got %d", p.name, p.v)
		}
	}
	for _, l := range []struct {
		name string
		vs   []int
	}{{"-worker-buffer", c.workerBuffers}, {"-completion-buffer", c.completions}} {
		for i, v := range l.vs {
			if v < 0 {
				return fmt.Errorf("%s must be >= 0, got %d", l.name, v)
			}
			if slices.Contains(l.vs[:i], v) {
				return fmt.Errorf("%s: %d is listed twice", l.name, v)
			}
		}
	}
	if err := c.checkSizes(set); err != nil {
		return err
	}
	if err := c.checkBounds(set); err != nil {
		return err
	}
	if !slices.Contains([]string{"const", "uniform", "exp"}, c.dist) {
		return fmt.Errorf("-dist must be const, uniform or exp, got %q", c.dist)
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"-panic-rate", c.panicRate}, {"-cancel-rate", c.cancelRate}} {
		if !(r.v >= 0 && r.v <= 1) { // also rejects NaN
			return fmt.Errorf("%s must be within [0, 1], got %v", r.name, r.v)
		}
	}
	if err := checkWeights(c.weights); err != nil {
		return err
	}
	if c.speeds != nil {
		if len(c.speeds) != c.workers {
			return fmt.Errorf("-speeds has %d values for %d workers", len(c.speeds), c.workers)
		}
		for i, s := range c.speeds {
			if !(s >= minSpeed && s <= maxSpeed) { // also rejects NaN
				return fmt.Errorf("-speeds: worker %d has speed %v, want 0.01 to 1e6 (a request costs -work/speed)", i, s)
			}
		}
	}
	names := c.compare
	if len(names) == 0 {
		names = []string{c.strategy}
	}
	for _, n := range names {
		if err := checkStrategy(n, c); err != nil {
			return err
		}
	}
	// Modes exclude each other: say so rather than ignore a flag.
	if c.picks > 0 {
		for _, f := range []string{"requesters", "nRequester", "requests", "speeds", "worker-buffer", "engine", "completion-buffer", "work",
			"dist", "panic-rate", "cancel-rate", "churn", "compare", "rounds", "v", "schedule", "scenario", "duration"} {
			if set[f] {
				return fmt.Errorf("-picks runs no workers: -%s cannot apply to it", f)
			}
		}
	}
	// One list at a time: a table varies one thing against its first value.
	var lists []string
	for _, l := range []struct {
		name string
		n    int
	}{{"worker-buffer", len(c.workerBuffers)}, {"engine", len(c.engines)}, {"completion-buffer", len(c.completions)},
		{"schedule", len(c.schedules)}} {
		if l.n > 1 {
			lists = append(lists, l.name)
		}
	}
	switch {
	case len(c.compare) > 0 && len(lists) > 0:
		return fmt.Errorf("-compare does not combine with a -%s list: one list at a time; run them apart", lists[0])
	case len(lists) > 1:
		return fmt.Errorf("a -%s list does not combine with a -%s list: one list at a time; run them apart", lists[0], lists[1])
	case c.plot != "" && (len(c.compare) > 0 || len(lists) > 0):
		return errors.New("-plot draws one run: it does not combine with -compare or a list")
	case set["rounds"] && len(lists) == 0:
		return errors.New("-rounds needs a -worker-buffer, -engine or -completion-buffer list (or a -schedule list) of at least two values, e.g. -engine channels,rings")
	case c.all && c.json:
		return errors.New("-all is for the text tables: the -json output is always complete")
	case c.all && (len(c.compare) > 0 || len(lists) > 0):
		return errors.New("-all is for the per-worker and -picks tables: -compare and rounds tables are never cut")
	}
	if err := c.checkScenario(set, lists); err != nil {
		return err
	}
	if err := c.checkServe(set, lists); err != nil {
		return err
	}
	if c.completions != nil {
		for _, e := range c.engines {
			if e == dispatcher.Channels {
				continue
			}
			return fmt.Errorf("-completion-buffer needs -engine channels: the %v engine has no completion channel", e)
		}
	}
	return nil
}

// checkScenario checks -scenario and the flags that only it takes or that
// it cannot take; lists holds the flags given as lists of two or more.
func (c *config) checkScenario(set map[string]bool, lists []string) error {
	switch c.scenario {
	case "":
		if set["duration"] {
			return errors.New("-duration is for -scenario tenants: the requesters' run ends after -requests")
		}
		return nil
	case scenarioTenants:
	default:
		return fmt.Errorf("-scenario: unknown scenario %q (want tenants)", c.scenario)
	}
	// A schedule orders what runs on the cores: with more workers than
	// cores, Go's scheduler time-slices the workers and decides as much
	// as the schedule does (docs/demo.md). So the scenario runs one
	// worker per core unless told otherwise.
	if !set["workers"] && !set["nWorker"] && c.weights == nil {
		c.workers = runtime.GOMAXPROCS(0)
	}
	if c.duration <= 0 || c.duration > maxDuration {
		return fmt.Errorf("-duration must be above 0 and at most %v, got %v", maxDuration, c.duration)
	}
	for _, f := range []string{"requesters", "nRequester", "requests", "dist", "panic-rate", "cancel-rate", "churn",
		"keys", "compare", "plot", "picks", "all", "v"} {
		if set[f] {
			return fmt.Errorf("-scenario tenants has its own workload: -%s cannot apply to it", f)
		}
	}
	for _, l := range lists {
		if l != "schedule" {
			return fmt.Errorf("-scenario tenants measures a -schedule list, not a -%s list", l)
		}
	}
	return nil
}

// spelled names a flag as the user gave it, so that an error about
// -nWorker 0 does not speak of a -workers the user never typed.
func spelled(set map[string]bool, name, alias string) string {
	if set[alias] && !set[name] {
		return "-" + alias
	}
	return "-" + name
}

// checkWeights rejects what the strategies would reject (their own check,
// strategies.CheckWeights), with the flag's name.
func checkWeights(w []int) error {
	if w == nil {
		return nil
	}
	if err := strategies.CheckWeights(w); err != nil {
		return fmt.Errorf("-weights: %w", err)
	}
	return nil
}

// checkStrategy builds the named strategy once, so an unknown name or a
// -churn the strategy cannot follow fails before anything runs.
func checkStrategy(name string, c *config) error {
	s, err := strategies.New(name, c.weightsOrEqual(), strategies.WithSeed(c.seed))
	switch {
	case errors.Is(err, strategies.ErrUnknown):
		return fmt.Errorf("unknown strategy %q (valid: %s)", name, strings.Join(strategies.Names(), ", "))
	case err != nil:
		return fmt.Errorf("-strategy %s: %w", name, err)
	}
	if _, ok := s.(strategies.Dynamic); c.churn > 0 && !ok {
		return fmt.Errorf("-churn: strategy %s does not support membership changes", name)
	}
	return nil
}

// weightsOrEqual returns the weights, or one weight of 1 per worker.
func (c *config) weightsOrEqual() []int {
	if c.weights != nil {
		return c.weights
	}
	return strategies.Equal(c.workers)
}

// speedsOrOne returns the speeds, or a speed of 1 per worker.
func (c *config) speedsOrOne() []float64 {
	if c.speeds != nil {
		return c.speeds
	}
	s := make([]float64, c.workers)
	for i := range s {
		s[i] = 1
	}
	return s
}

func printUsage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "Usage: balancer [flags]\n\nRuns requesters against workers through Pike's load balancer and reports.\n\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
