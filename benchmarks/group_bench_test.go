package benchmarks

import (
	"context"
	"fmt"
	"testing"

	"github.com/alitto/pond/v2"
	"github.com/gobalancer/balancer/dispatcher"
	"golang.org/x/sync/errgroup"
)

// groupImpl runs one group of n empty tasks, each returning 1, and checks
// that it got n results in order; done releases its workers.
type groupImpl struct {
	name string
	make func(workers int) (run func(n int) error, done func())
}

// groupImpls are the ways users of each library run a batch and collect
// its results in submission order, with GOMAXPROCS workers: our Group on
// both engines, errgroup with SetLimit writing into a preallocated slice
// (a goroutine and a closure per task), and pond v2's result group.
var groupImpls = []groupImpl{
	{"balancer", func(w int) (func(int) error, func()) { return balancerGroup(w, dispatcher.Rings) }},
	{"balancer-channels", func(w int) (func(int) error, func()) { return balancerGroup(w, dispatcher.Channels) }},
	{"errgroup", errgroupGroup},
	{"pond", pondGroup},
}

func balancerGroup(w int, e dispatcher.Engine) (func(int) error, func()) {
	d, err := dispatcher.New(dispatcher.WithWorkers(w), dispatcher.WithEngine(e))
	if err != nil {
		panic(err) // static options: a programming error
	}
	task := func(context.Context) (int, error) { return 1, nil }
	run := func(n int) error {
		g := dispatcher.NewGroup[int](context.Background(), d)
		for range n {
			if err := g.Go(task); err != nil {
				return err
			}
		}
		res, err := g.Wait()
		return check(res, n, err)
	}
	return run, func() { _ = d.Close(context.Background()) }
}

func errgroupGroup(w int) (func(int) error, func()) {
	run := func(n int) error {
		res := make([]int, n)
		var g errgroup.Group
		g.SetLimit(w)
		for i := range n {
			g.Go(func() error { res[i] = 1; return nil })
		}
		return check(res, n, g.Wait())
	}
	return run, func() {}
}

func pondGroup(w int) (func(int) error, func()) {
	p := pond.NewResultPool[int](w)
	task := func() (int, error) { return 1, nil }
	run := func(n int) error {
		g := p.NewGroup()
		for range n {
			g.SubmitErr(task)
		}
		res, err := g.Wait()
		return check(res, n, err)
	}
	return run, p.StopAndWait
}

func check(res []int, n int, err error) error {
	if err != nil {
		return err
	}
	if len(res) != n {
		return fmt.Errorf("%d results for %d tasks", len(res), n)
	}
	for i, v := range res {
		if v != 1 {
			return fmt.Errorf("result %d is %d", i, v)
		}
	}
	return nil
}

// BenchmarkGroup runs b.N empty tasks as groups of size tasks, each
// submitted from one goroutine and waited for with its results in
// submission order: ns/op and cpu-ns/op are per task, B/op and allocs/op
// what a group costs per task (its fixed cost spread over size tasks).
func BenchmarkGroup(b *testing.B) {
	for _, im := range groupImpls {
		for _, size := range []int{100, 10000} {
			b.Run(fmt.Sprintf("impl=%s/size=%d", im.name, size), func(b *testing.B) {
				run, done := im.make(Workers())
				defer done()
				b.ReportAllocs()
				cpu := cpuTime()
				b.ResetTimer()
				for left := b.N; left > 0; left -= size {
					if err := run(min(size, left)); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				reportCPU(b, cpu)
			})
		}
	}
}
