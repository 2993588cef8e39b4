// Command keyed shows routing keys: under consistent-hash every request of
// one key reaches the same worker, and because the dispatcher honours the
// pick (it waits for that worker's room rather than re-routing), the
// requests of a key run in the order they were submitted.
//
//	go run ./examples/keyed -keys 8 -per-key 200
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
)

func main() {
	keys := flag.Int("keys", 8, "distinct routing keys")
	perKey := flag.Int("per-key", 200, "requests per key")
	workers := flag.Int("workers", 4, "workers")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The strategy is pure, so a twin of the dispatcher's tells in advance
	// where each key goes.
	twin, err := strategies.New("consistent-hash", strategies.Equal(*workers))
	if err != nil {
		fmt.Fprintln(os.Stderr, "keyed:", err)
		os.Exit(1)
	}
	for k := range *keys {
		fmt.Printf("key %d -> worker %d\n", k, twin.Pick(uint64(k)))
	}
	inOrder, err := Run(ctx, *workers, *keys, *perKey)
	if err != nil {
		fmt.Fprintln(os.Stderr, "keyed:", err)
		os.Exit(1)
	}
	fmt.Printf("%d requests over %d keys ran in submission order per key: %v\n", *keys**perKey, *keys, inOrder)
}

// Run submits perKey requests for each of keys keys, interleaved, and
// reports whether every key's requests ran in submission order.
func Run(ctx context.Context, workers, keys, perKey int) (bool, error) {
	d, err := dispatcher.New(dispatcher.WithWorkers(workers), dispatcher.WithStrategyName("consistent-hash"))
	if err != nil {
		return false, err
	}
	var mu sync.Mutex
	ran := make([][]int, keys) // per key, sequence numbers in the order they ran
	var futures []*dispatcher.Future[int]
	for seq := range perKey {
		for k := range keys {
			f, err := dispatcher.Submit(ctx, d.Key(uint64(k)), func(context.Context) (int, error) {
				mu.Lock()
				ran[k] = append(ran[k], seq)
				mu.Unlock()
				return seq, nil
			})
			if err != nil {
				d.Close(context.Background())
				return false, err
			}
			futures = append(futures, f)
		}
	}
	for _, f := range futures {
		if _, err := f.Wait(ctx); err != nil {
			d.Close(context.Background())
			return false, err
		}
	}
	if err := d.Close(ctx); err != nil {
		return false, err
	}
	for _, seqs := range ran {
		if len(seqs) != perKey {
			return false, nil
		}
		for i, s := range seqs {
			if s != i {
				return false, nil
			}
		}
	}
	return true, nil
}
