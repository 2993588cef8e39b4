package dispatcher_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
)

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
