package dispatcher_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gobalancer/balancer/dispatcher"
)

// Fan a CPU-bound job out across the workers as one group and combine the
// answers, which come back in submission order (examples/fanout is the
// longer version).
func Example_fanout() {
	d, err := dispatcher.New(dispatcher.WithWorkers(4))
	if err != nil {
		panic(err)
	}
	defer d.Close(context.Background())

	chunks := [][]byte{[]byte("alpha"), []byte("beta"), []byte("gamma")}
	g := dispatcher.NewGroup[[32]byte](context.Background(), d)
	for _, c := range chunks {
		g.Go(func(context.Context) ([32]byte, error) { return sha256.Sum256(c), nil })
	}
	sums, err := g.Wait()
	if err != nil {
		panic(err)
	}
	for i, sum := range sums {
		fmt.Printf("%s %x\n", chunks[i], sum[:4])
	}
	// Output:
	// alpha 8ed3f6ad
	// beta f44e64e7
	// gamma be9d587d
}

// Two dispatchers as the stages of a pipeline: stage 1 parses, stage 2
// squares what stage 1 hands it, waiting while stage 2 is full; the first
// failure in either stage cancels both (examples/pipeline is the longer
// version).
func Example_pipeline() {
	parse, _ := dispatcher.New(dispatcher.WithWorkers(2))
	defer parse.Close(context.Background())
	square, _ := dispatcher.New(dispatcher.WithWorkers(2), dispatcher.WithWorkerBuffer(1), dispatcher.WithIntakeBuffer(2))
	defer square.Close(context.Background())

	run := func(records []string) ([]int, error) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		stage2, stage1 := dispatcher.NewGroup[[2]int](ctx, square), dispatcher.NewGroup[struct{}](ctx, parse)
		for i, rec := range records {
			stage1.Go(func(context.Context) (struct{}, error) {
				n, err := strconv.Atoi(rec)
				if err != nil {
					cancel(err) // both stages
					return struct{}{}, err
				}
				return struct{}{}, stage2.Go(func(context.Context) ([2]int, error) { return [2]int{i, n * n}, nil })
			})
		}
		stage1.Wait()
		pairs, _ := stage2.Wait()
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		out := make([]int, len(records))
		for _, p := range pairs {
			out[p[0]] = p[1] // stage 2's order is stage 1's finishing order
		}
		return out, nil
	}
	fmt.Println(run([]string{"1", "2", "3", "4"}))
	_, err := run([]string{"1", "two", "3"})
	fmt.Println(err)
	// Output:
	// [1 4 9 16] <nil>
	// strconv.Atoi: parsing "two": invalid syntax
}

// The first error cancels the group's context, so tasks still queued end
// without running, and Wait returns that error (errgroup.WithContext).
func ExampleNewGroup() {
	d, _ := dispatcher.New(dispatcher.WithWorkers(1))
	defer d.Close(context.Background())

	g := dispatcher.NewGroup[int](context.Background(), d)
	g.Go(func(context.Context) (int, error) { return 1, nil })
	g.Go(func(context.Context) (int, error) { return 0, errors.New("task 2 failed") })
	g.Go(func(ctx context.Context) (int, error) { return 3, ctx.Err() })
	res, err := g.Wait()
	fmt.Println(res, err)
	fmt.Println(context.Cause(g.Context()))
	// Output:
	// [1 0 0] task 2 failed
	// task 2 failed
}

// CollectErrors runs every task and joins every error, in submission
// order (conc's WithErrors); a panic is one of them.
func ExampleCollectErrors() {
	d, _ := dispatcher.New(dispatcher.WithWorkers(2))
	defer d.Close(context.Background())

	g := dispatcher.NewGroup[int](context.Background(), d, dispatcher.CollectErrors())
	for i := range 4 {
		g.Go(func(context.Context) (int, error) {
			switch i {
			case 1:
				return 0, fmt.Errorf("task %d failed", i)
			case 3:
				panic("task 3")
			}
			return i * 10, nil
		})
	}
	res, err := g.Wait()
	fmt.Println(res)
	fmt.Println(err)
	fmt.Println(errors.Is(err, dispatcher.ErrTaskPanicked))
	// Output:
	// [0 0 20 0]
	// task 1 failed
	// dispatcher: task panicked: task 3
	// true
}

// TryGo submits only when the dispatcher has room now.
func ExampleGroup_TryGo() {
	d, _ := dispatcher.New(dispatcher.WithWorkers(1), dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(0))
	defer d.Close(context.Background())

	release, started := make(chan struct{}), make(chan struct{})
	g := dispatcher.NewGroup[int](context.Background(), d)
	g.Go(func(context.Context) (int, error) { close(started); <-release; return 1, nil })
	<-started
	d.Stats() // the balancer has counted the busy worker's room by now
	fmt.Println(g.TryGo(func(context.Context) (int, error) { return 2, nil }))
	close(release)
	fmt.Println(g.Wait())
	// Output:
	// false
	// [1] <nil>
}

// A panic handler sees every task's panic with its stack, also of Go's
// tasks, whose answers nobody reads.
func ExampleWithPanicHandler() {
	seen := make(chan any, 1)
	d, _ := dispatcher.New(dispatcher.WithPanicHandler(func(pe *dispatcher.PanicError) {
		seen <- pe.Value
	}))
	d.Go(context.Background(), func(context.Context) error { panic("lost otherwise") })
	fmt.Println(<-seen)
	d.Close(context.Background())
	fmt.Println(d.Stats().Panics)
	// Output:
	// lost otherwise
	// 1
}

// Resize grows or shrinks the worker set in one call; shrinking removes
// the highest-index workers once they have finished their queues.
func ExampleDispatcher_Resize() {
	d, _ := dispatcher.New(dispatcher.WithWorkers(2))
	defer d.Close(context.Background())

	fmt.Println(d.Resize(4))
	fmt.Println(d.Resize(1))
	for _, w := range d.Stats().Workers {
		fmt.Println(w.Index, w.Removed)
	}
	fmt.Println(errors.Is(d.Resize(0), dispatcher.ErrBadOption))
	// Output:
	// <nil>
	// <nil>
	// 0 false
	// 1 true
	// 2 true
	// 3 true
	// true
}

func ExampleDo() {
	d, err := dispatcher.New(dispatcher.WithWorkers(2))
	if err != nil {
		panic(err)
	}
	defer d.Close(context.Background())

	v, err := dispatcher.Do(context.Background(), d, func(context.Context) (int, error) { return 6 * 7, nil })
	fmt.Println(v, err)
	// Output: 42 <nil>
}

func ExampleDo_panic() {
	d, _ := dispatcher.New()
	defer d.Close(context.Background())

	_, err := dispatcher.Do(context.Background(), d, func(context.Context) (int, error) { panic("boom") })
	var pe *dispatcher.PanicError
	fmt.Println(errors.Is(err, dispatcher.ErrTaskPanicked), errors.As(err, &pe) && pe.Value == "boom")
	// Output: true true
}

func ExampleTrySubmit() {
	d, _ := dispatcher.New(dispatcher.WithWorkers(1), dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(0))
	defer d.Close(context.Background())

	release := make(chan struct{})
	started := make(chan struct{})
	slow, _ := dispatcher.Submit(context.Background(), d, func(context.Context) (string, error) {
		close(started)
		<-release
		return "slow", nil
	})
	<-started
	// The only worker is busy and the intake is a rendezvous: no room.
	_, err := dispatcher.TrySubmit(context.Background(), d, func(context.Context) (string, error) { return "", nil })
	fmt.Println(errors.Is(err, dispatcher.ErrBusy))
	close(release)
	fmt.Println(slow.Wait(context.Background()))
	// Output:
	// true
	// slow <nil>
}

// Requests with the same routing key reach the same worker under an
// affinity strategy.
func ExampleDispatcher_Key() {
	d, err := dispatcher.New(dispatcher.WithWorkers(4), dispatcher.WithStrategyName("consistent-hash"))
	if err != nil {
		panic(err)
	}
	defer d.Close(context.Background())

	user := d.Key(42)
	v, err := dispatcher.Do(context.Background(), user, func(context.Context) (int, error) { return 1, nil })
	fmt.Println(v, err)
	// Output: 1 <nil>
}

// Close drains what was accepted; with a deadline it gives up on what has
// not started.
func ExampleDispatcher_Close() {
	d, _ := dispatcher.New(dispatcher.WithWorkers(1))
	f, _ := dispatcher.Submit(context.Background(), d, func(context.Context) (int, error) {
		time.Sleep(10 * time.Millisecond)
		return 1, nil
	})
	fmt.Println(d.Close(context.Background()))
	fmt.Println(f.Wait(context.Background()))
	_, err := dispatcher.Do(context.Background(), d, func(context.Context) (int, error) { return 2, nil })
	fmt.Println(errors.Is(err, dispatcher.ErrClosed))
	// Output:
	// <nil>
	// 1 <nil>
	// true
}

// Weighted workers: swrr sends each worker its exact share, interleaved
// (examples/weighted is the longer version).
func ExampleWithWeights() {
	d, err := dispatcher.New(dispatcher.WithWeights(2, 1, 1), dispatcher.WithStrategyName("swrr"))
	if err != nil {
		panic(err)
	}
	for i := range 400 {
		if _, err := dispatcher.Submit(context.Background(), d, func(context.Context) (int, error) { return i, nil }); err != nil {
			panic(err)
		}
	}
	d.Close(context.Background()) // drains every accepted request
	for _, w := range d.Stats().Workers {
		fmt.Printf("worker %d weight %d completed %d\n", w.Index, w.Weight, w.Completed)
	}
	// Output:
	// worker 0 weight 2 completed 200
	// worker 1 weight 1 completed 100
	// worker 2 weight 1 completed 100
}

// Keyed requests under consistent-hash run in submission order per key:
// they all reach one worker, whose queue is first in, first out.
func ExampleView_keyed() {
	d, err := dispatcher.New(dispatcher.WithWorkers(3), dispatcher.WithStrategyName("consistent-hash"))
	if err != nil {
		panic(err)
	}
	var order []int
	var futures []*dispatcher.Future[int]
	for seq := range 5 {
		f, _ := dispatcher.Submit(context.Background(), d.Key(7), func(context.Context) (int, error) {
			order = append(order, seq) // one worker runs key 7: no race
			return seq, nil
		})
		futures = append(futures, f)
	}
	for _, f := range futures {
		f.Wait(context.Background())
	}
	d.Close(context.Background())
	fmt.Println(order)
	// Output: [0 1 2 3 4]
}

// Give each worker its own state, used without a lock: a task finds its
// worker's slot from its context.
func ExampleWithWorkerIndex() {
	const workers = 2
	d, err := dispatcher.New(dispatcher.WithWorkers(workers), dispatcher.WithWorkerIndex())
	if err != nil {
		panic(err)
	}
	var bytesSeen [workers]int // one per worker: a worker runs one task at a time
	words := []string{"alpha", "beta", "gamma", "delta"}
	for _, w := range words {
		err := d.Go(context.Background(), func(ctx context.Context) error {
			i, ok := d.WorkerIndex(ctx)
			if !ok {
				return errors.New("no worker index: WithWorkerIndex not given")
			}
			bytesSeen[i] += len(w)
			return nil
		})
		if err != nil {
			panic(err)
		}
	}
	// Close waits for every task and orders their writes before what follows.
	if err := d.Close(context.Background()); err != nil {
		panic(err)
	}
	fmt.Println(bytesSeen[0] + bytesSeen[1])
	// Output: 19
}

// Hand Futures back with Release once their answers are read, and Submit
// reuses them: a loop like this one allocates nothing per task.
func ExampleFuture_Release() {
	d, err := dispatcher.New(dispatcher.WithWorkers(2))
	if err != nil {
		panic(err)
	}
	defer d.Close(context.Background())
	sum := 0
	for i := range 100 {
		f, err := dispatcher.Submit(context.Background(), d, func(context.Context) (int, error) { return i, nil })
		if err != nil {
			panic(err)
		}
		v, _ := f.Wait(context.Background())
		f.Release() // f must not be used after this
		sum += v
	}
	fmt.Println(sum)
	// Output: 4950
}
