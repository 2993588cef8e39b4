package dispatcher_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/gobalancer/balancer/dispatcher"
)

// Fan a CPU-bound job out across the workers and combine the answers in
// order (examples/fanout is the longer version).
func Example_fanout() {
	d, err := dispatcher.New[[32]byte](dispatcher.WithWorkers(4))
	if err != nil {
		panic(err)
	}
	defer d.Close(context.Background())

	chunks := [][]byte{[]byte("alpha"), []byte("beta"), []byte("gamma")}
	futures := make([]*dispatcher.Future[[32]byte], len(chunks))
	for i, c := range chunks {
		futures[i], err = d.Submit(context.Background(), func(context.Context) ([32]byte, error) {
			return sha256.Sum256(c), nil
		})
		if err != nil {
			panic(err)
		}
	}
	for i, f := range futures {
		sum, _ := f.Wait(context.Background())
		fmt.Printf("%s %x\n", chunks[i], sum[:4])
	}
	// Output:
	// alpha 8ed3f6ad
	// beta f44e64e7
	// gamma be9d587d
}

func ExampleDispatcher_Do() {
	d, err := dispatcher.New[int](dispatcher.WithWorkers(2))
	if err != nil {
		panic(err)
	}
	defer d.Close(context.Background())

	v, err := d.Do(context.Background(), func(context.Context) (int, error) { return 6 * 7, nil })
	fmt.Println(v, err)
	// Output: 42 <nil>
}

func ExampleDispatcher_Do_panic() {
	d, _ := dispatcher.New[int]()
	defer d.Close(context.Background())

	_, err := d.Do(context.Background(), func(context.Context) (int, error) { panic("boom") })
	var pe *dispatcher.PanicError
	fmt.Println(errors.Is(err, dispatcher.ErrTaskPanicked), errors.As(err, &pe) && pe.Value == "boom")
	// Output: true true
}

func ExampleDispatcher_TrySubmit() {
	d, _ := dispatcher.New[string](dispatcher.WithWorkers(1), dispatcher.WithWorkerBuffer(0), dispatcher.WithIntakeBuffer(0))
	defer d.Close(context.Background())

	release := make(chan struct{})
	started := make(chan struct{})
	slow, _ := d.Submit(context.Background(), func(context.Context) (string, error) {
		close(started)
		<-release
		return "slow", nil
	})
	<-started
	// The only worker is busy and the intake is a rendezvous: no room.
	_, err := d.TrySubmit(context.Background(), func(context.Context) (string, error) { return "", nil })
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
	d, err := dispatcher.New[int](dispatcher.WithWorkers(4), dispatcher.WithStrategyName("consistent-hash"))
	if err != nil {
		panic(err)
	}
	defer d.Close(context.Background())

	user := d.Key(42)
	v, err := user.Do(context.Background(), func(context.Context) (int, error) { return 1, nil })
	fmt.Println(v, err)
	// Output: 1 <nil>
}

// Close drains what was accepted; with a deadline it gives up on what has
// not started.
func ExampleDispatcher_Close() {
	d, _ := dispatcher.New[int](dispatcher.WithWorkers(1))
	f, _ := d.Submit(context.Background(), func(context.Context) (int, error) {
		time.Sleep(10 * time.Millisecond)
		return 1, nil
	})
	fmt.Println(d.Close(context.Background()))
	fmt.Println(f.Wait(context.Background()))
	_, err := d.Do(context.Background(), func(context.Context) (int, error) { return 2, nil })
	fmt.Println(errors.Is(err, dispatcher.ErrClosed))
	// Output:
	// <nil>
	// 1 <nil>
	// true
}

// Weighted workers: swrr sends each worker its exact share, interleaved
// (examples/weighted is the longer version).
func ExampleWithWeights() {
	d, err := dispatcher.New[int](dispatcher.WithWeights(2, 1, 1), dispatcher.WithStrategyName("swrr"))
	if err != nil {
		panic(err)
	}
	for i := range 400 {
		if _, err := d.Submit(context.Background(), func(context.Context) (int, error) { return i, nil }); err != nil {
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
func ExampleKeyed_Submit() {
	d, err := dispatcher.New[int](dispatcher.WithWorkers(3), dispatcher.WithStrategyName("consistent-hash"))
	if err != nil {
		panic(err)
	}
	var order []int
	var futures []*dispatcher.Future[int]
	for seq := range 5 {
		f, _ := d.Key(7).Submit(context.Background(), func(context.Context) (int, error) {
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
