package dispatcher_test

import (
	"context"
	"fmt"
	"slices"

	"github.com/gobalancer/balancer/dispatcher"
)

// CompletionOrder makes Results yield each answer as soon as it is in: a
// slow task holds back no other. Here the first task submitted finishes
// only once the others have been yielded. (Which of the quick ones comes
// first is up to the workers, so they are printed sorted.)
func ExampleCompletionOrder() {
	// No worker buffer: the slow task's worker is sent nothing while it
	// runs, so the quick tasks go to the other.
	d, err := dispatcher.New(dispatcher.WithWorkers(2), dispatcher.WithWorkerBuffer(0))
	if err != nil {
		panic(err)
	}
	defer d.Close(context.Background())

	g := dispatcher.NewGroup[string](context.Background(), d, dispatcher.CompletionOrder())
	slow := make(chan struct{})
	g.Go(func(ctx context.Context) (string, error) {
		select {
		case <-slow:
			return "slow", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	words := []string{"kiwi", "fig", "apple"}
	for _, w := range words {
		g.Go(func(context.Context) (string, error) { return w, nil })
	}
	var quick []string
	for s, err := range g.Results() {
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		if s == "slow" {
			fmt.Println("then", s)
			continue
		}
		quick = append(quick, s)
		if len(quick) == len(words) {
			slices.Sort(quick)
			fmt.Println("first", quick)
			close(slow)
		}
	}
	// Output:
	// first [apple fig kiwi]
	// then slow
}
