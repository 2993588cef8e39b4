// Command weighted runs heterogeneous workers: one has twice the capacity
// of the others, so it gets weight 2. Smooth weighted round-robin (swrr)
// then sends it exactly twice the share, interleaved rather than in bursts,
// and least-requests (pending divided by weight) does the same by load.
//
//	go run ./examples/weighted -requests 1200
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gobalancer/balancer/dispatcher"
)

func main() {
	requests := flag.Int("requests", 1200, "requests per strategy")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, name := range []string{"swrr", "least-requests"} {
		shares, err := Shares(ctx, name, []int{2, 1, 1}, *requests)
		if err != nil {
			fmt.Fprintln(os.Stderr, "weighted:", err)
			os.Exit(1)
		}
		fmt.Printf("%-15s weights 2,1,1 -> completed %v\n", name, shares)
	}
}

// Shares runs n requests through a dispatcher with the given strategy and
// weights and returns how many each worker completed.
func Shares(ctx context.Context, strategy string, weights []int, n int) ([]int64, error) {
	d, err := dispatcher.New(dispatcher.WithWeights(weights...), dispatcher.WithStrategyName(strategy))
	if err != nil {
		return nil, err
	}
	futures := make([]*dispatcher.Future[int], 0, n)
	for i := range n {
		f, err := dispatcher.Submit(ctx, d, func(context.Context) (int, error) { return i, nil })
		if err != nil {
			d.Close(context.Background())
			return nil, err
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		if _, err := f.Wait(ctx); err != nil {
			d.Close(context.Background())
			return nil, err
		}
	}
	if err := d.Close(ctx); err != nil {
		return nil, err
	}
	var out []int64
	for _, w := range d.Stats().Workers {
		out = append(out, w.Completed)
	}
	return out, nil
}
