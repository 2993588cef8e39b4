package benchmarks

import (
	"context"
	"fmt"
	"iter"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/alitto/pond/v2"
	"github.com/destel/rill"
	"github.com/gobalancer/balancer/dispatcher"
	"github.com/sourcegraph/conc/stream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
)

// streamLen is the longest stream BenchmarkStream runs: b.N items go
// through streams of streamLen items (the last one, or a b.N below it,
// shorter). Every implementation then pays its start and end (a conc
// stream's callbacker, rill's goroutines, a Map range's window, a group's
// result slice) once per million items, however large b.N is; run with
// -benchtime 1000000x so that every figure is one full stream.
const streamLen = 1_000_000

// streamKinds are BenchmarkStream's task kinds, named as in Kinds.
var streamKinds = []string{"empty", "spin10us"}

// streamImpl runs one stream of n items, item i being i, through task,
// which returns its item after the work, and checks that it got n results
// equal to 0, 1, ..., n-1 in that order; done releases its workers.
type streamImpl struct {
	name string
	make func(workers int, task streamTask) (run func(n int) error, done func())
}

type streamTask = func(context.Context, int) (int, error)

// streamImpls are the ways users of each library map a stream of items
// to results in input order, with GOMAXPROCS workers:
//
//   - balancer, balancer-channels: dispatcher.Map with its default window,
//     results yielded in order as they come, on each engine;
//   - balancer-group: our Group on the rings engine, a batch and not a
//     stream: every item is submitted, then Wait returns all the results,
//     so no result waits for the one before it to be taken (the
//     baseline of "the ordered map costs at most 1/0.97 of an unordered
//     batch"), but its results take memory in proportion to n;
//   - conc: sourcegraph/conc's stream, MaxGoroutines workers, each task
//     returning the callback that checks its result, run in order;
//   - rill: destel/rill's OrderedMap over FromSeq, ranged with ToSeq2;
//   - pond: pond v2's result group on a result pool;
//   - errgroup: SetLimit, each task writing into a preallocated slice.
var streamImpls = []streamImpl{
	{"balancer", func(w int, t streamTask) (func(int) error, func()) { return mapStream(w, t, dispatcher.Rings) }},
	{"balancer-channels", func(w int, t streamTask) (func(int) error, func()) {
		return mapStream(w, t, dispatcher.Channels)
	}},
	{"balancer-group", groupStream},
	{"conc", concStream},
	{"rill", rillStream},
	{"pond", pondStream},
	{"errgroup", errgroupStream},
}

// items is the input every implementation reads: 0, 1, ..., n-1.
func items(n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}
}

// inOrder counts results as they come, for the implementations that hand
// them over one by one.
type inOrder struct {
	next int
	err  error
}

func (o *inOrder) take(v int) {
	if v != o.next && o.err == nil {
		o.err = fmt.Errorf("result %d is %d", o.next, v)
	}
	o.next++
}

func (o *inOrder) result(n int) error {
	if o.err == nil && o.next != n {
		return fmt.Errorf("%d results for %d items", o.next, n)
	}
	return o.err
}

// checkInOrder checks a batch's results.
func checkInOrder(res []int, n int, err error) error {
	if err != nil {
		return err
	}
	if len(res) != n {
		return fmt.Errorf("%d results for %d items", len(res), n)
	}
	for i, v := range res {
		if v != i {
			return fmt.Errorf("result %d is %d", i, v)
		}
	}
	return nil
}

func newStreamDispatcher(w int, e dispatcher.Engine) *dispatcher.Dispatcher {
	d, err := dispatcher.New(dispatcher.WithWorkers(w), dispatcher.WithEngine(e))
	if err != nil {
		panic(err) // static options: a programming error
	}
	return d
}

func mapStream(w int, task streamTask, e dispatcher.Engine) (func(int) error, func()) {
	d := newStreamDispatcher(w, e)
	run := func(n int) error {
		var o inOrder
		for v, err := range dispatcher.Map(context.Background(), d, items(n), task) {
			if err != nil {
				return err
			}
			o.take(v)
		}
		return o.result(n)
	}
	return run, func() { _ = d.Close(context.Background()) }
}

func groupStream(w int, task streamTask) (func(int) error, func()) {
	d := newStreamDispatcher(w, dispatcher.Rings)
	run := func(n int) error {
		g := dispatcher.NewGroup[int](context.Background(), d)
		for i := range items(n) {
			if err := g.Go(func(ctx context.Context) (int, error) { return task(ctx, i) }); err != nil {
				return err
			}
		}
		res, err := g.Wait()
		return checkInOrder(res, n, err)
	}
	return run, func() { _ = d.Close(context.Background()) }
}

// concStream makes a stream per run: Wait ends its pool and callbacker.
func concStream(w int, task streamTask) (func(int) error, func()) {
	run := func(n int) error {
		s := stream.New().WithMaxGoroutines(w)
		var o inOrder
		for i := range items(n) {
			s.Go(func() stream.Callback {
				v, err := task(context.Background(), i)
				return func() {
					if err != nil && o.err == nil {
						o.err = err
					}
					o.take(v)
				}
			})
		}
		s.Wait()
		return o.result(n)
	}
	return run, func() {}
}

// rillStream: FromSeq and OrderedMap start their goroutines per run; a
// stream ranged to its end leaves none behind.
func rillStream(w int, task streamTask) (func(int) error, func()) {
	f := func(i int) (int, error) { return task(context.Background(), i) }
	run := func(n int) error {
		var o inOrder
		for v, err := range rill.ToSeq2(rill.OrderedMap(rill.FromSeq(items(n), nil), w, f)) {
			if err != nil {
				return err
			}
			o.take(v)
		}
		return o.result(n)
	}
	return run, func() {}
}

func pondStream(w int, task streamTask) (func(int) error, func()) {
	p := pond.NewResultPool[int](w)
	run := func(n int) error {
		g := p.NewGroup()
		for i := range items(n) {
			g.SubmitErr(func() (int, error) { return task(context.Background(), i) })
		}
		res, err := g.Wait()
		return checkInOrder(res, n, err)
	}
	return run, p.StopAndWait
}

func errgroupStream(w int, task streamTask) (func(int) error, func()) {
	run := func(n int) error {
		res := make([]int, n)
		var g errgroup.Group
		g.SetLimit(w)
		for i := range items(n) {
			g.Go(func() error {
				v, err := task(context.Background(), i)
				res[i] = v
				return err
			})
		}
		return checkInOrder(res, n, g.Wait())
	}
	return run, func() {}
}

// heapPeak samples the heap in use (MemStats.HeapInuse: the spans holding
// objects, the objects' bytes plus the free room inside those spans) every
// millisecond from its own goroutine, through runtime/metrics, which does
// not stop the world as ReadMemStats does.
type heapPeak struct {
	samples []metrics.Sample
	peak    uint64
	stop    chan struct{}
	done    chan struct{}
}

func startHeapPeak() *heapPeak {
	h := &heapPeak{
		samples: []metrics.Sample{
			{Name: "/memory/classes/heap/objects:bytes"},
			{Name: "/memory/classes/heap/unused:bytes"},
		},
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	h.sample()
	go func() {
		defer close(h.done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				h.sample()
			case <-h.stop:
				return
			}
		}
	}()
	return h
}

func (h *heapPeak) sample() {
	metrics.Read(h.samples)
	h.peak = max(h.peak, h.samples[0].Value.Uint64()+h.samples[1].Value.Uint64())
}

// end stops the sampler, waits for its goroutine to return, and returns
// the peak, counting one last sample.
func (h *heapPeak) end() uint64 {
	close(h.stop)
	<-h.done
	h.sample()
	return h.peak
}

// BenchmarkStream maps b.N items, in streams of up to streamLen, to
// results taken in input order (see streamImpls). ns/op, cpu-ns/op, B/op
// and allocs/op are per item; peak-heap-B is the most heap in use (sampled
// every millisecond) while the streams ran, whatever was in use before.
//
//	go test -run '^$' -bench BenchmarkStream -count 5 -benchtime 1000000x .
func BenchmarkStream(b *testing.B) {
	for _, im := range streamImpls {
		for _, kind := range streamKinds {
			b.Run(fmt.Sprintf("impl=%s/kind=%s", im.name, kind), func(b *testing.B) {
				work := Task(kind)
				run, done := im.make(Workers(), func(_ context.Context, i int) (int, error) {
					work()
					return i, nil
				})
				defer done()
				b.ReportAllocs()
				heap := startHeapPeak()
				cpu := cpuTime()
				b.ResetTimer()
				for left := b.N; left > 0; left -= streamLen {
					if err := run(min(streamLen, left)); err != nil {
						heap.end()
						b.Fatal(err)
					}
				}
				b.StopTimer()
				reportCPU(b, cpu)
				b.ReportMetric(float64(heap.end()), "peak-heap-B")
			})
		}
	}
}

// TestStreamImpls runs every stream implementation of BenchmarkStream on
// short streams, so that a wrong one fails the ordinary test run, and
// checks that the checks catch a result out of place.
func TestStreamImpls(t *testing.T) {
	for _, im := range streamImpls {
		t.Run(im.name, func(t *testing.T) {
			for _, kind := range streamKinds {
				work := Task(kind)
				run, done := im.make(2, func(_ context.Context, i int) (int, error) {
					work()
					return i, nil
				})
				for _, n := range []int{0, 1, 1000} {
					assert.NoError(t, run(n), "%s, %d items", kind, n)
				}
				done()
			}
		})
	}
	require.Error(t, checkInOrder([]int{0, 2, 1}, 3, nil))
	require.Error(t, checkInOrder([]int{0, 1}, 3, nil))
	var o inOrder
	for _, v := range []int{0, 2, 1} {
		o.take(v)
	}
	require.Error(t, o.result(3))
	require.NotZero(t, startHeapPeak().end())
}
