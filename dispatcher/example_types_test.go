package dispatcher_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/gobalancer/balancer/dispatcher"
)

// One dispatcher serves tasks of every result type: R is inferred from
// each task, and all of them share its workers, schedule and tenants
// (examples/service is the longer version, behind HTTP handlers).
func Example_resultTypes() {
	ctx := context.Background()
	d, err := dispatcher.New(dispatcher.WithWorkers(2))
	if err != nil {
		panic(err)
	}
	defer d.Close(ctx)

	n, err := dispatcher.Do(ctx, d, func(context.Context) (int, error) { return len("balancer"), nil })
	fmt.Println(n, err)
	s, err := dispatcher.Do(ctx, d, func(context.Context) (string, error) { return strings.Repeat("ab", 3), nil })
	fmt.Println(s, err)

	g := dispatcher.NewGroup[[]byte](ctx, d)
	for _, w := range []string{"alpha", "beta"} {
		g.Go(func(context.Context) ([]byte, error) { return []byte(strings.ToUpper(w)), nil })
	}
	chunks, err := g.Wait()
	fmt.Printf("%s %v\n", chunks, err)
	// Output:
	// 8 <nil>
	// ababab <nil>
	// [ALPHA BETA] <nil>
}
