// Command balancer is the demo of Pike's load balancer: nRequester
// requesters against nWorker workers through a dispatcher, with a report of
// throughput, latency, per-worker shares and Pike's pending figure, on
// either engine (-engine channels or rings). It also traces a strategy's
// picks (-picks), compares strategies on one workload (-compare), measures
// engines, worker-queue depths or completion-channel capacities in
// interleaved rounds, and plots. The balancer's schedule is -schedule; the
// tenants scenario (-scenario tenants) shows what each schedule does for an
// interactive tenant beside a saturating background one.
//
//	go run ./cmd/balancer
//	go run ./cmd/balancer -nRequester 100 -nWorker 10 -engine channels -completion-buffer 0
//	go run ./cmd/balancer -engine channels,rings -rounds 9
//	go run ./cmd/balancer -speeds 1,1,1,1,1,1,2,2 -compare least-pending,round-robin,p2c
//	go run ./cmd/balancer -picks 300 -strategy iwrr -weights 100,100,66
//	go run ./cmd/balancer -scenario tenants -schedule fifo,priority,deadline,fair
//
// The flags and the JSON field names are a stable interface: scripts
// depend on them (docs/demo.md lists them).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, restore the default handling: a second Ctrl-C
	// kills the process even if the drain were stuck.
	go func() { <-ctx.Done(); stop() }()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Exit statuses of run.
const (
	exitOK          = 0
	exitFailure     = 1   // the run itself failed (e.g. the plot could not be written)
	exitUsage       = 2   // bad flags: one line on stderr, no report
	exitInterrupted = 130 // SIGINT/SIGTERM: the partial report, if any, was printed
)

// run is the whole program with its environment passed in, so tests drive
// it in-process: args without the program name, ctx cancelled on a signal.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, stderr)
	if errors.Is(err, errHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "balancer: %v\n", err)
		return exitUsage
	}
	cfg.progress = cfg.progress && !cfg.json && !cfg.verbose && isTerminal(stderr)

	ax := cfg.axis()
	switch {
	case cfg.serve != "":
		err = runServe(ctx, cfg, stdout, stderr)
	case cfg.scenario == scenarioTenants:
		err = runTenants(ctx, cfg, stdout, stderr)
	case cfg.picks > 0:
		err = runPicks(ctx, cfg, stdout, stderr)
	case len(cfg.compare) > 0:
		err = runCompare(ctx, cfg, stdout, stderr)
	case ax != nil:
		err = runRounds(ctx, cfg, ax, stdout, stderr)
	default:
		err = runSingle(ctx, cfg, stdout, stderr)
	}
	switch {
	case errors.Is(err, errInterrupted):
		fmt.Fprintln(stderr, "balancer: interrupted; the report above is partial")
		return exitInterrupted
	case errors.Is(err, errInterruptedEarly):
		fmt.Fprintln(stderr, "balancer: interrupted before there was anything to report; nothing printed")
		return exitInterrupted
	case err != nil:
		fmt.Fprintf(stderr, "balancer: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// errInterrupted is returned once a partial report has been printed after
// ctx ended; errInterruptedEarly when ctx ended before anything could be
// printed (a rounds run with no complete round, a -compare stopped before
// its first run), so that the message does not point at a report that is
// not there.
var (
	errInterrupted      = errors.New("interrupted")
	errInterruptedEarly = errors.New("interrupted before anything was reported")
)
