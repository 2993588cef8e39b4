package dispatcher_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
)

// faultRun is one exactly-once run: requests from closed-loop requesters
// over workers, with faults injected per mille of requests.
type faultRun struct {
	requests, requesters, workers int
	maxWork                       time.Duration       // CPU per task, uniform in [0, maxWork)
	opts                          []dispatcher.Option // the engine and, on channels, the completion buffer
	strategy                      string
	seed                          uint64
	bound                         time.Duration
	// schedule, if set, is the dispatcher's; under ByPriority requests
	// spread over every class, under ByDeadline most carry a deadline
	// (far enough never to expire within bound).
	schedule dispatcher.Schedule
}

// faultReport counts what a run did.
type faultReport struct {
	ok, panicked, exited, cancelled                  int64
	before, queued, running                          int64 // cancellations injected at each stage
	adds, removes, reweights, churnRefused, replaced int64
	elapsed                                          time.Duration
}

func (r faultReport) String() string {
	return fmt.Sprintf("ok=%d panicked=%d exited=%d cancelled=%d (before=%d queued=%d running=%d) churn: add=%d remove=%d reweight=%d refused=%d replaced=%d in %v",
		r.ok, r.panicked, r.exited, r.cancelled, r.before, r.queued, r.running,
		r.adds, r.removes, r.reweights, r.churnRefused, r.replaced, r.elapsed.Round(time.Millisecond))
}

// The fault of each request, per mille.
const (
	kindNormal = iota
	kindPanic
	kindGoexit
	kindCancelBefore
	kindCancelQueued
	kindCancelRunning
)

func faultKind(x int) (kind int, churn bool) {
	switch {
	case x < 10:
		return kindPanic, false // 1%
	case x < 15:
		return kindGoexit, false // 0.5%
	case x < 25:
		return kindCancelBefore, false // 1%
	case x < 35:
		return kindCancelQueued, false // 1%
	case x < 45:
		return kindCancelRunning, false // 1%
	case x < 55:
		return kindNormal, true // 1%: a churn event, then a normal request
	}
	return kindNormal, false
}

// runFaults runs r and checks, with a bitset over request ids, that every
// request is answered exactly once and each kind of fault ends with its own
// error.
func runFaults(t *testing.T, r faultRun) faultReport {
	opts := []dispatcher.Option{
		dispatcher.WithWorkers(r.workers),
		dispatcher.WithWorkerBuffer(4),
		dispatcher.WithStrategyName(r.strategy),
	}
	if r.schedule != 0 {
		opts = append(opts, dispatcher.WithSchedule(r.schedule))
	}
	d, err := dispatcher.New(append(opts, r.opts...)...)
	require.NoError(t, err)

	var (
		answered = make([]atomic.Uint64, (r.requests+63)/64)
		ran      = make([]atomic.Int32, r.requests)
		next     atomic.Int64
		rep      faultReport
		counts   [6]atomic.Int64 // answers by kind of outcome, see below
		injected [6]atomic.Int64
		churn    sync.Mutex // one churn event at a time keeps the live set simple
	)
	const (
		outOK = iota
		outPanicked
		outExited
		outCancelled
	)
	answer := func(id int) {
		bit := uint64(1) << (id % 64)
		if old := answered[id/64].Or(bit); old&bit != 0 {
			t.Errorf("request %d answered twice", id)
		}
	}
	doChurn := func(rng *rand.Rand) {
		churn.Lock()
		defer churn.Unlock()
		var live []int
		for _, w := range d.Stats().Workers {
			if !w.Removed {
				live = append(live, w.Index)
			}
		}
		var err error
		switch op := rng.IntN(3); {
		case op == 0 && len(live) < 2*r.workers || len(live) < 2:
			_, err = d.AddWorker(1)
			atomic.AddInt64(&rep.adds, 1)
		case op <= 1:
			err = d.RemoveWorker(live[rng.IntN(len(live))])
			atomic.AddInt64(&rep.removes, 1)
		default:
			err = d.SetWeight(live[rng.IntN(len(live))], rng.IntN(3))
			atomic.AddInt64(&rep.reweights, 1)
		}
		if err != nil {
			// Refusals are named: the last member with a positive weight
			// stays.
			assert.ErrorIs(t, err, strategies.ErrLastMember)
			atomic.AddInt64(&rep.churnRefused, 1)
		}
	}
	start := time.Now()
	one := func(rng *rand.Rand, id int) {
		kind, churnFirst := faultKind(rng.IntN(1000))
		if churnFirst {
			doChurn(rng)
		}
		injected[kind].Add(1)
		work := time.Duration(rng.Int64N(int64(r.maxWork) + 1))
		started := make(chan struct{})
		task := func(ctx context.Context) (int, error) {
			ran[id].Add(1)
			switch kind {
			case kindPanic:
				return panicTask(id)
			case kindGoexit:
				runtime.Goexit()
			case kindCancelRunning:
				close(started)
				<-ctx.Done()
				return 0, ctx.Err()
			case kindCancelQueued:
				if err := ctx.Err(); err != nil {
					return 0, err
				}
			}
			burn(work)
			return id, nil
		}
		base := context.Background()
		view := d.Priority(0)
		switch r.schedule {
		case dispatcher.ByPriority:
			view = d.Priority(id % (dispatcher.MaxPriority + 1))
		case dispatcher.ByDeadline:
			if id%3 != 0 {
				var cancelDL context.CancelFunc
				base, cancelDL = context.WithDeadline(base, start.Add(4*r.bound+time.Duration(id%97)*time.Millisecond))
				defer cancelDL()
			}
		}
		ctx, cancel := context.WithCancel(base)
		defer cancel()
		var v int
		var err error
		switch kind {
		case kindCancelBefore:
			cancel()
			v, err = dispatcher.Do(ctx, view, task)
		case kindCancelQueued:
			var f *dispatcher.Future[int]
			if f, err = dispatcher.Submit(ctx, view, task); err == nil {
				cancel()
				v, err = f.Wait(context.Background())
			}
		case kindCancelRunning:
			var f *dispatcher.Future[int]
			if f, err = dispatcher.Submit(ctx, view, task); err == nil {
				select {
				case <-started:
				case <-time.After(r.bound):
					t.Errorf("request %d never started", id)
				}
				cancel()
				v, err = f.Wait(context.Background())
			}
		default:
			if id%2 == 0 {
				v, err = dispatcher.Do(ctx, view, task)
			} else {
				var f *dispatcher.Future[int]
				if f, err = dispatcher.Submit(ctx, view, task); err == nil {
					v, err = f.Wait(context.Background())
				}
			}
		}
		answer(id)
		var pe *dispatcher.PanicError
		switch {
		case err == nil:
			assert.Equal(t, id, v, "request %d got another's value", id)
			assert.Contains(t, []int{kindNormal, kindCancelQueued}, kind, "request %d", id)
			counts[outOK].Add(1)
		case errors.As(err, &pe):
			assert.ErrorIs(t, err, dispatcher.ErrTaskPanicked)
			assert.Equal(t, kindPanic, kind, "request %d", id)
			assert.Equal(t, fmt.Sprintf("boom %d", id), pe.Value)
			counts[outPanicked].Add(1)
		case errors.Is(err, dispatcher.ErrTaskExited):
			assert.Equal(t, kindGoexit, kind, "request %d", id)
			counts[outExited].Add(1)
		case errors.Is(err, context.Canceled):
			assert.Contains(t, []int{kindCancelBefore, kindCancelQueued, kindCancelRunning}, kind, "request %d", id)
			counts[outCancelled].Add(1)
		default:
			t.Errorf("request %d (kind %d): unexpected error %v", id, kind, err)
		}
		if kind == kindCancelBefore {
			assert.Zero(t, ran[id].Load(), "request %d cancelled before submit ran", id)
		}
	}

	var wg sync.WaitGroup
	for g := range r.requesters {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(r.seed, uint64(g)))
			for {
				id := int(next.Add(1) - 1)
				if id >= r.requests {
					return
				}
				one(rng, id)
			}
		})
	}
	within(t, r.bound, "requesters", wg.Wait)
	closeWithin(t, d, r.bound)
	rep.elapsed = time.Since(start)

	for id := range r.requests {
		require.NotZero(t, answered[id/64].Load()&(1<<(id%64)), "request %d never answered", id)
		require.LessOrEqual(t, ran[id].Load(), int32(1), "request %d ran more than once", id)
	}
	rep.ok, rep.panicked, rep.exited, rep.cancelled = counts[outOK].Load(), counts[outPanicked].Load(), counts[outExited].Load(), counts[outCancelled].Load()
	rep.before, rep.queued, rep.running = injected[kindCancelBefore].Load(), injected[kindCancelQueued].Load(), injected[kindCancelRunning].Load()
	rep.replaced = d.Stats().Replaced
	require.Equal(t, int64(r.requests), rep.ok+rep.panicked+rep.exited+rep.cancelled)
	require.Equal(t, injected[kindPanic].Load(), rep.panicked)
	require.Equal(t, injected[kindGoexit].Load(), rep.exited)
	require.Equal(t, rep.exited, rep.replaced, "every Goexit replaces its worker's goroutine")
	require.GreaterOrEqual(t, rep.cancelled, rep.before+rep.running)
	s := d.Stats()
	require.Equal(t, s.Dispatched, s.Completed)
	require.Zero(t, s.Pending)
	return rep
}

// TestExactlyOnce: every accepted request gets exactly one answer, under
// panics, Goexits, cancellations at every stage and worker churn, on each
// engine, with each completion channel of the channel engine.
func TestExactlyOnce(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		runExactlyOnce(t, eng, faultRun{requests: 10_000, requesters: 32, workers: 4, maxWork: 20 * time.Microsecond, bound: 30 * time.Second})
	})
}

// runExactlyOnce runs base over least-pending and round-robin, each with
// every completion cell of eng; the seed differs per run so runs do not
// repeat one another's fault sequence.
func runExactlyOnce(t *testing.T, eng dispatcher.Engine, base faultRun) {
	for i, strategy := range []string{"least-pending", "round-robin"} {
		for j, comp := range completionAxis(eng, base.workers) {
			name := "strategy=" + strategy
			if comp.name != "" {
				name = "completion=" + comp.name + "/" + name
			}
			t.Run(name, func(t *testing.T) {
				r := base
				r.strategy = strategy
				r.opts = append([]dispatcher.Option{dispatcher.WithEngine(eng)}, comp.opts...)
				r.seed += uint64(1 + 2*i + j)
				rep := runFaults(t, r)
				t.Log(rep)
			})
		}
	}
}

// TestExactlyOnceSchedules: the exactly-once run, small, under every
// schedule on each engine: panics, Goexits, cancellations at every stage
// and worker churn while the schedule reorders the requests.
func TestExactlyOnceSchedules(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for i, s := range schedules {
			t.Run("schedule="+s.String(), func(t *testing.T) {
				rep := runFaults(t, faultRun{
					requests: 1500, requesters: 8, workers: 3, maxWork: 10 * time.Microsecond,
					opts: []dispatcher.Option{dispatcher.WithEngine(eng)}, strategy: "least-pending",
					seed: 100 + uint64(i), bound: 10 * time.Second, schedule: s,
				})
				t.Log(rep)
			})
		}
	})
}

// TestFaultChurnZeroBuffers: the tightest channel-engine cell (intake
// 0, worker buffer 0, completion 0) and rings at intake 0 / buffer 0, with
// tasks that panic or Goexit, cancelled requesters, and AddWorker /
// RemoveWorker / SetWeight churn; then Close with a short deadline. Every
// accepted request is answered exactly once, no hang, Stats balance.
func TestFaultChurnZeroBuffers(t *testing.T) {
	t.Parallel() // a soak: robust to a shared core, and the package's longest
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		for _, cc := range completionAxis(eng, 1) {
			t.Run(fmt.Sprintf("completion=%s", cc.name), func(t *testing.T) {
				for round := range 3 {
					faultChurnRound(t, round, append([]dispatcher.Option{dispatcher.WithEngine(eng), dispatcher.WithWorkers(2),
						dispatcher.WithIntakeBuffer(0), dispatcher.WithWorkerBuffer(0)}, cc.opts...))
				}
			})
		}
	})
}

func faultChurnRound(t *testing.T, round int, opts []dispatcher.Option) {
	d, err := dispatcher.New(opts...)
	require.NoError(t, err)
	const requesters, per = 12, 120
	var accepted, answered atomic.Int64
	var ran sync.Map
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Go(func() {
		live := []int{0, 1}
		rng := rand.New(rand.NewPCG(uint64(round), 7))
		for {
			select {
			case <-stop:
				return
			default:
			}
			switch op := rng.IntN(3); {
			case op == 0 && len(live) < 8:
				if i, err := d.AddWorker(1); err == nil {
					live = append(live, i)
				}
			case op == 1 && len(live) > 1:
				k := rng.IntN(len(live))
				if d.RemoveWorker(live[k]) == nil {
					live = append(live[:k], live[k+1:]...)
				}
			default:
				_ = d.SetWeight(live[rng.IntN(len(live))], rng.IntN(3))
			}
			time.Sleep(100 * time.Microsecond)
		}
	})
	within(t, 60*time.Second, "faulty requests under churn", func() {
		var wg sync.WaitGroup
		for g := range requesters {
			wg.Go(func() {
				for k := range per {
					id := g*per + k
					task := func(context.Context) (int, error) {
						if _, dup := ran.LoadOrStore(id, true); dup {
							t.Errorf("request %d ran twice", id)
						}
						switch id % 9 {
						case 1:
							panic(id)
						case 2:
							runtime.Goexit()
						}
						return id, nil
					}
					ctx, cancel := context.WithCancel(context.Background())
					if id%9 == 3 {
						go func() { time.Sleep(time.Duration(id%5) * 20 * time.Microsecond); cancel() }()
					}
					var v int
					var err error
					if k%2 == 0 {
						v, err = dispatcher.Do(ctx, d, task)
						if err == nil || ctx.Err() == nil {
							accepted.Add(1)
						}
					} else {
						var f *dispatcher.Future[int]
						f, err = dispatcher.Submit(ctx, d, task)
						if err == nil {
							accepted.Add(1)
							v, err = f.Wait(context.Background())
						}
					}
					cancel()
					switch {
					case err == nil:
						assert.Equal(t, id, v)
						answered.Add(1)
					case id%9 == 1:
						assert.ErrorIs(t, err, dispatcher.ErrTaskPanicked)
						answered.Add(1)
					case id%9 == 2:
						assert.ErrorIs(t, err, dispatcher.ErrTaskExited)
						answered.Add(1)
					case id%9 == 3:
						assert.ErrorIs(t, err, context.Canceled)
					default:
						t.Errorf("request %d: %v", id, err)
					}
				}
			})
		}
		wg.Wait()
	})
	close(stop)
	churn.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	within(t, 10*time.Second, "Close", func() { _ = d.Close(ctx); <-d.Done() })
	s := d.Stats()
	require.Equal(t, s.Dispatched, s.Completed)
	require.Zero(t, s.Pending)
	var pend int
	for _, w := range s.Workers {
		pend += w.Pending
	}
	require.Zero(t, pend)
	require.GreaterOrEqual(t, s.Replaced, int64(1))
}
