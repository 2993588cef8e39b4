package dispatcher_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
)

// Task kinds a fuzz submit can carry.
const (
	fuzzOK = iota
	fuzzPanic
	fuzzGoexit
	fuzzWait // runs until its context ends or the run is released
	fuzzDone // its context is done before submit
	fuzzKinds
)

type fuzzReq struct {
	id     int
	kind   int
	f      *dispatcher.Future[int]
	cancel context.CancelFunc
}

// FuzzDispatcher decodes a random sequence of submit, cancel, add, remove,
// re-weight and close from the fuzz bytes (byte 0 is the configuration,
// its top bit the engine; each later byte one operation: op = b%8,
// arg = b/8) and checks that every accepted request is answered exactly
// once with an answer its kind allows, that nothing refused or abandoned
// ran, and that no goroutine is left.
func FuzzDispatcher(f *testing.F) {
	for _, seed := range [][]byte{
		{0x00, 0, 8, 16, 24, 32, 7},                         // submit each kind, close
		{0x15, 24, 24, 24, 24, 3, 11, 0, 0, 0, 0, 0, 0},     // waits fill the workers, cancels, submits
		{0x41, 0, 4, 4, 5, 13, 6, 14, 0, 8, 16, 5, 0, 0},    // round-robin with adds, removes, weights
		{0x2a, 24, 24, 0, 0, 0, 7, 0, 15, 0},                // close with a 1 ms deadline over waits
		{0x3f, 1, 9, 17, 25, 33, 2, 10, 18, 26, 34, 23, 31}, // rendezvous intake, TrySubmit
		{0x42, 0x41, 0x18, 0, 0x25, 0, 7, 0, 0x0f, 9},       // remove a worker while it runs, then close with a deadline (found by fuzzing)
	} {
		// Each seed once per engine: bit 7 clear is the channel engine, set
		// is rings.
		f.Add(seed)
		f.Add(append([]byte{seed[0] | 0x80}, seed[1:]...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		if len(data) > 128 {
			data = data[:128]
		}
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		fuzzRun(t, data)
	})
}

func fuzzRun(t *testing.T, data []byte) {
	cfg := data[0]
	opts := []dispatcher.Option{
		dispatcher.WithEngine(engines[int(cfg>>7)%len(engines)]),
		dispatcher.WithWorkers(1 + int(cfg%4)),
		dispatcher.WithWorkerBuffer([]int{0, 1, 4}[cfg>>2%3]),
		dispatcher.WithStrategyName([]string{"least-pending", "round-robin"}[cfg>>6&1]),
	}
	if intake := []int{0, 2, -1}[cfg>>4%3]; intake >= 0 {
		opts = append(opts, dispatcher.WithIntakeBuffer(intake))
	}
	d, err := dispatcher.New(opts...)
	require.NoError(t, err)

	release := make(chan struct{})
	runs := make([]atomic.Int32, len(data))
	var reqs []*fuzzReq
	var refused []int
	closed := false
	created := 1 + int(cfg%4)

	for id, b := range data[1:] {
		op, arg := b%8, int(b/8)
		switch op {
		case 0, 1, 2: // submit: 0 and 1 block (bounded by the context), 2 tries
			kind := arg % fuzzKinds
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			if kind == fuzzDone {
				cancel()
			}
			task := func(ctx context.Context) (int, error) {
				runs[id].Add(1)
				switch kind {
				case fuzzPanic:
					panic(id)
				case fuzzGoexit:
					runtime.Goexit()
				case fuzzWait:
					select {
					case <-ctx.Done():
						return 0, ctx.Err()
					case <-release:
					}
				}
				return id, nil
			}
			var fut *dispatcher.Future[int]
			if op == 2 {
				fut, err = dispatcher.TrySubmit(ctx, d, task)
			} else {
				fut, err = dispatcher.Submit(ctx, d, task)
			}
			if err != nil {
				cancel()
				refused = append(refused, id)
				switch {
				case kind == fuzzDone: // checked before anything else
					assert.ErrorIs(t, err, context.Canceled)
				case closed:
					assert.ErrorIs(t, err, dispatcher.ErrClosed)
				case op == 2:
					assert.ErrorIs(t, err, dispatcher.ErrBusy)
				default:
					assert.ErrorIs(t, err, context.DeadlineExceeded, "a blocked Submit ends only with its context")
				}
				continue
			}
			assert.False(t, closed, "accepted after Close")
			reqs = append(reqs, &fuzzReq{id: id, kind: kind, f: fut, cancel: cancel})
		case 3: // cancel a request
			if len(reqs) > 0 {
				reqs[arg%len(reqs)].cancel()
			}
		case 4:
			if _, err := d.AddWorker(arg % 3); err == nil {
				created++
			} else {
				assertNamed(t, err)
			}
		case 5:
			if err := d.RemoveWorker(arg % (created + 1)); err != nil {
				assertNamed(t, err)
			}
		case 6:
			if err := d.SetWeight(arg%(created+1), arg%3); err != nil {
				assertNamed(t, err)
			}
		case 7:
			if arg%2 == 0 {
				continue // half the closes are skipped: runs go on longer
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			if err := d.Close(ctx); err != nil {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
			}
			cancel()
			closed = true
		}
	}

	close(release)
	closeWithin(t, d, 10*time.Second)
	exited := int64(0)
	for _, r := range reqs {
		v, err := waitFuture(t, r.f, 5*time.Second)
		r.cancel()
		n := runs[r.id].Load()
		var pe *dispatcher.PanicError
		switch {
		case err == nil:
			assert.Equal(t, r.id, v)
			assert.Contains(t, []int{fuzzOK, fuzzWait}, r.kind)
			assert.Equal(t, int32(1), n, "request %d answered with a value ran %d times", r.id, n)
		case errors.As(err, &pe):
			assert.Equal(t, fuzzPanic, r.kind)
			assert.Equal(t, r.id, pe.Value)
			assert.Equal(t, int32(1), n)
		case errors.Is(err, dispatcher.ErrTaskExited):
			assert.Equal(t, fuzzGoexit, r.kind)
			assert.Equal(t, int32(1), n)
			exited++
		case errors.Is(err, dispatcher.ErrClosed):
			assert.ErrorIs(t, err, context.DeadlineExceeded, "only an abandon answers an accepted request with ErrClosed")
			assert.Zero(t, n, "request %d abandoned after it ran", r.id)
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			assert.LessOrEqual(t, n, int32(1))
		default:
			t.Errorf("request %d (kind %d): unexpected answer %v", r.id, r.kind, err)
		}
	}
	for _, id := range refused {
		assert.Zero(t, runs[id].Load(), "refused request %d ran", id)
	}
	s := d.Stats()
	assert.Equal(t, s.Dispatched, s.Completed)
	assert.Equal(t, exited, s.Replaced)
	assert.Zero(t, s.Pending)
}

// assertNamed checks that a refused membership change says why with a
// named error.
func assertNamed(t *testing.T, err error) {
	t.Helper()
	for _, named := range []error{dispatcher.ErrClosed, dispatcher.ErrNoWorker, dispatcher.ErrBadOption, strategies.ErrLastMember, strategies.ErrNoMember} {
		if errors.Is(err, named) {
			return
		}
	}
	t.Errorf("unnamed error %v", err)
}

// fuzzSched is one FuzzScheduler run's bookkeeping.
type fuzzSched struct {
	t       *testing.T
	d       *dispatcher.Dispatcher
	sched   dispatcher.Schedule
	closed  bool
	abandon bool // Close's context ended first: queued requests may be abandoned

	runs     []*atomic.Int32
	answered []*atomic.Int32
	mustRun  []bool   // accepted, never cancelled, and Close drains: must run once
	pending  []func() // waits for the answers not yet taken
	live     []int
}

// task makes request id's task, which counts its runs and returns id.
func (f *fuzzSched) task(id int) func(context.Context) (int, error) {
	runs := f.runs[id] // not the slice, which the next submits grow
	return func(context.Context) (int, error) { runs.Add(1); return id, nil }
}

func (f *fuzzSched) newID(mustRun bool) int {
	f.runs = append(f.runs, new(atomic.Int32))
	f.answered = append(f.answered, new(atomic.Int32))
	f.mustRun = append(f.mustRun, mustRun)
	return len(f.runs) - 1
}

// check is one answer of request id: its value, or an error it may have.
func (f *fuzzSched) check(id int, v int, err error, cancelled bool) {
	f.answered[id].Add(1)
	switch {
	case err == nil:
		assert.Equal(f.t, id, v, "request %d got another's value", id)
	case cancelled && errors.Is(err, context.Canceled):
	case errors.Is(err, dispatcher.ErrClosed):
		// Refused after Close began, or abandoned by a Close whose
		// context ended.
	default:
		assert.Fail(f.t, "unexpected answer", "request %d: %v", id, err)
	}
}

// classFor returns the class b selects and whether the schedule takes it.
func (f *fuzzSched) classFor(b byte) (int, bool) {
	p := int(b) % (dispatcher.MaxPriority + 1)
	return p, p == 0 || f.sched == dispatcher.ByPriority
}

// submitErr checks a refused submit: ErrClosed after Close, or the
// class refusal under a schedule without classes.
func (f *fuzzSched) submitErr(err error, classOK bool, cancelled bool) {
	switch {
	case !classOK:
		assert.ErrorIs(f.t, err, dispatcher.ErrWrongSchedule)
	case cancelled:
		assert.ErrorIs(f.t, err, context.Canceled)
	default:
		assert.ErrorIs(f.t, err, dispatcher.ErrClosed)
	}
}

func (f *fuzzSched) op(code, arg byte) {
	d := f.d
	p, classOK := f.classFor(arg)
	view := d.Priority(p)
	switch code % 9 {
	case 0: // Do
		id := f.newID(classOK && !f.closed)
		v, err := dispatcher.Do(context.Background(), view, f.task(id))
		if err != nil && (!classOK || f.closed) {
			f.submitErr(err, classOK, false)
			f.mustRun[id] = false
			return
		}
		f.check(id, v, err, false)
	case 1: // Submit
		id := f.newID(classOK && !f.closed)
		fut, err := dispatcher.Submit(context.Background(), view, f.task(id))
		if err != nil {
			f.submitErr(err, classOK, false)
			f.mustRun[id] = false
			return
		}
		f.pending = append(f.pending, func() {
			v, err := fut.Wait(context.Background())
			f.check(id, v, err, false)
		})
	case 2: // Go: nobody hears its answer; it must run once unless refused
		id := f.newID(classOK && !f.closed)
		task := f.task(id) // here, not on the worker: it reads f's state
		err := view.Go(context.Background(), func(ctx context.Context) error { _, err := task(ctx); return err })
		if err != nil {
			f.submitErr(err, classOK, false)
			f.mustRun[id] = false
			return
		}
		f.answered[id].Add(1) // accepted: its answer is its run
	case 3: // cancelled before submit: never runs
		id := f.newID(false)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := dispatcher.Do(ctx, view, f.task(id))
		if classOK {
			assert.ErrorIs(f.t, err, context.Canceled)
		} else {
			assert.ErrorIs(f.t, err, dispatcher.ErrWrongSchedule)
		}
		f.pending = append(f.pending, func() { assert.Zero(f.t, f.runs[id].Load(), "request %d cancelled before submit ran", id) })
	case 4: // cancelled after submit: runs at most once, answered once
		id := f.newID(false)
		ctx, cancel := context.WithCancel(context.Background())
		fut, err := dispatcher.Submit(ctx, view, f.task(id))
		cancel()
		if err != nil {
			f.submitErr(err, classOK, false)
			return
		}
		f.pending = append(f.pending, func() {
			v, err := fut.Wait(context.Background())
			f.check(id, v, err, true)
		})
	case 5: // a group with a Limit and, sometimes, a Share
		var opts []dispatcher.GroupOption
		if arg&1 != 0 {
			opts = append(opts, dispatcher.Limit(1+int(arg>>1)%3))
		}
		share := arg&8 != 0
		if share {
			opts = append(opts, dispatcher.Share(1+int(arg>>4)))
		}
		shareOK := !share || f.sched == dispatcher.Fair
		g := dispatcher.NewGroup[int](context.Background(), d, append(opts, dispatcher.Tenant("fuzz"))...)
		n := 1 + int(arg)%4
		var ids []int
		failed := false
		for range n {
			id := f.newID(classOK && shareOK && !f.closed)
			ids = append(ids, id)
			if err := g.Priority(p).Go(f.task(id)); err != nil {
				f.mustRun[id] = false
				switch {
				case !shareOK || !classOK:
					assert.ErrorIs(f.t, err, dispatcher.ErrWrongSchedule)
				case failed:
					// The first refusal cancelled the group.
					assert.ErrorIs(f.t, err, context.Canceled)
				default:
					f.submitErr(err, classOK, false)
				}
				failed = true
			}
		}
		f.pending = append(f.pending, func() {
			vs, err := g.Wait()
			if err != nil {
				ok := errors.Is(err, dispatcher.ErrClosed) || errors.Is(err, dispatcher.ErrWrongSchedule)
				assert.True(f.t, ok, "group: %v", err)
				for _, id := range ids {
					f.answered[id].Add(1)
				}
				return
			}
			if assert.Len(f.t, vs, n) {
				for i, id := range ids {
					f.check(id, vs[i], nil, false)
				}
			}
		})
	case 6, 7: // membership
		if f.closed {
			return
		}
		var err error
		switch {
		case arg%3 == 0 && len(f.live) < 5:
			var w int
			if w, err = d.AddWorker(1 + int(arg)%3); err == nil {
				f.live = append(f.live, w)
			}
		case arg%3 == 1 && len(f.live) > 0:
			i := int(arg>>2) % len(f.live)
			if err = d.RemoveWorker(f.live[i]); err == nil {
				f.live = append(f.live[:i:i], f.live[i+1:]...)
			}
		case len(f.live) > 0:
			err = d.SetWeight(f.live[int(arg>>2)%len(f.live)], int(arg)%3)
		}
		if err != nil {
			assert.ErrorIs(f.t, err, strategies.ErrLastMember)
		}
	case 8: // Close: draining, or abandoning with a context already ended
		if f.closed {
			return
		}
		f.closed = true
		if arg&1 == 0 {
			assert.NoError(f.t, d.Close(context.Background()))
			return
		}
		f.abandon = true
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := d.Close(ctx); err != nil {
			assert.ErrorIs(f.t, err, context.Canceled)
		}
	}
}

// FuzzScheduler: random sequences of submits (Do, Submit, Go, views with a
// class, groups with a Limit and a Share, cancellations before and after),
// membership changes and Close, over a random schedule and engine on a
// small dispatcher: every accepted request is answered exactly once, runs
// at most once, and runs once when nothing cancelled it and Close drained.
// TestMain's goleak checks that no goroutine outlives the run.
func FuzzScheduler(f *testing.F) {
	f.Add(byte(0), byte(0), []byte{0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 0})
	f.Add(byte(1), byte(1), []byte{1, 9, 1, 10, 2, 11, 5, 13, 5, 31, 6, 0, 7, 4, 1, 7, 4, 8, 1})
	f.Add(byte(2), byte(0), []byte{1, 200, 1, 100, 4, 3, 2, 5, 0, 7, 6, 1, 1, 50, 8, 0, 1, 1})
	f.Add(byte(3), byte(1), []byte{5, 9, 5, 25, 5, 1, 1, 3, 6, 0, 6, 1, 7, 2, 0, 2, 8, 1, 0, 0})
	f.Add(byte(3), byte(0), []byte{6, 0, 6, 0, 1, 1, 5, 255, 7, 1, 7, 5, 4, 4, 1, 2, 8, 0})
	f.Add(byte(1), byte(0), []byte{2, 7, 2, 6, 1, 5, 1, 4, 0, 3, 4, 2, 3, 1, 5, 77, 8, 1})
	f.Fuzz(func(t *testing.T, schedB, engB byte, ops []byte) {
		if len(ops) > 128 {
			ops = ops[:128]
		}
		sched := schedules[int(schedB)%len(schedules)]
		eng := engines[int(engB)%len(engines)]
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithSchedule(sched),
			dispatcher.WithWorkers(2), dispatcher.WithWorkerBuffer(1), dispatcher.WithStrategyName("least-pending"))
		require.NoError(t, err)
		fs := &fuzzSched{t: t, d: d, sched: sched, live: []int{0, 1}}
		within(t, 10*time.Second, "the fuzzed sequence", func() {
			for i := 0; i+1 < len(ops); i += 2 {
				fs.op(ops[i], ops[i+1])
			}
			var wg sync.WaitGroup
			for _, w := range fs.pending {
				wg.Go(w)
			}
			wg.Wait()
			if !fs.closed {
				assert.NoError(t, d.Close(context.Background()))
			}
			<-d.Done()
		})
		for id := range fs.runs {
			runs := fs.runs[id].Load()
			require.LessOrEqual(t, runs, int32(1), "request %d ran more than once", id)
			require.LessOrEqual(t, fs.answered[id].Load(), int32(1), "request %d answered more than once", id)
			if fs.mustRun[id] && !fs.abandon {
				require.Equal(t, int32(1), runs, "request %d accepted but never ran", id)
				require.Equal(t, int32(1), fs.answered[id].Load(), "request %d never answered", id)
			}
		}
		s := d.Stats()
		require.Equal(t, s.Dispatched, s.Completed)
		require.Zero(t, s.Pending)
	})
}
