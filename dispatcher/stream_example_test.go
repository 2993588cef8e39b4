package dispatcher_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/gobalancer/balancer/dispatcher"
)

// words yields the words of s one at a time: an input read lazily, as
// Map reads it.
func words(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for w := range strings.FieldsSeq(s) {
			if !yield(w) {
				return
			}
		}
	}
}

// Map runs a task per item of a stream on the workers and yields the
// results in input order, however the tasks interleave.
func ExampleMap() {
	d, err := dispatcher.New(dispatcher.WithWorkers(4))
	if err != nil {
		panic(err)
	}
	defer d.Close(context.Background())

	length := func(_ context.Context, w string) (int, error) { return len(w), nil }
	for n, err := range dispatcher.Map(context.Background(), d, words("the quick brown fox jumps"), length) {
		if err != nil {
			fmt.Println("error:", err)
			break
		}
		fmt.Print(n, " ")
	}
	fmt.Println()
	// Output:
	// 3 5 5 3 5
}

// By default a task's error ends the stream after the results of the
// items before it; CollectErrors yields it beside its item instead.
func ExampleMap_collectErrors() {
	d, err := dispatcher.New(dispatcher.WithWorkers(2))
	if err != nil {
		panic(err)
	}
	defer d.Close(context.Background())

	errShort := errors.New("too short")
	length := func(_ context.Context, w string) (int, error) {
		if len(w) < 3 {
			return 0, errShort
		}
		return len(w), nil
	}
	in := words("stream of words in order")
	fmt.Println("default:")
	for n, err := range dispatcher.Map(context.Background(), d, in, length) {
		fmt.Println(" ", n, err)
	}
	fmt.Println("CollectErrors:")
	for n, err := range dispatcher.Map(context.Background(), d, in, length, dispatcher.CollectErrors()) {
		fmt.Println(" ", n, err)
	}
	// Output:
	// default:
	//   6 <nil>
	//   0 too short
	// CollectErrors:
	//   6 <nil>
	//   0 too short
	//   5 <nil>
	//   0 too short
	//   5 <nil>
}

// Results yields a group's answers in submission order, each as soon as
// it and those before it are in, instead of all at once from Wait.
func ExampleGroup_Results() {
	d, err := dispatcher.New(dispatcher.WithWorkers(3))
	if err != nil {
		panic(err)
	}
	defer d.Close(context.Background())

	g := dispatcher.NewGroup[string](context.Background(), d)
	for _, w := range []string{"one", "two", "three"} {
		g.Go(func(context.Context) (string, error) { return strings.ToUpper(w), nil })
	}
	for s, err := range g.Results() {
		fmt.Println(s, err)
	}
	fmt.Println(g.Go(func(context.Context) (string, error) { return "", nil }))
	// Output:
	// ONE <nil>
	// TWO <nil>
	// THREE <nil>
	// dispatcher: group already waited
}
