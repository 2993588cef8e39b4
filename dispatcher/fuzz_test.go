package dispatcher_test

import (
	"context"
	"errors"
	"runtime"
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
