package dispatcher_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
)

// gated is a dynamic strategy whose next Pick, once armed, blocks until
// gate is closed, holding the balancer goroutine; onAdd runs inside Add,
// on the balancer goroutine, when the membership change takes effect.
type gated struct {
	strategies.Strategy
	dyn     strategies.Dynamic
	armed   atomic.Bool
	entered chan struct{}
	gate    chan struct{}
	onAdd   func()
}

func newGated(t *testing.T, n int) *gated {
	s, err := strategies.New("least-pending", strategies.Equal(n))
	require.NoError(t, err)
	return &gated{Strategy: s, dyn: s.(strategies.Dynamic), entered: make(chan struct{}), gate: make(chan struct{})}
}

func (g *gated) Pick(key uint64) int {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.gate
	}
	return g.Strategy.Pick(key)
}
func (g *gated) Add(w int) (int, error) {
	if g.onAdd != nil {
		g.onAdd()
	}
	return g.dyn.Add(w)
}
func (g *gated) Remove(i int) error            { return g.dyn.Remove(i) }
func (g *gated) SetWeight(i, weight int) error { return g.dyn.SetWeight(i, weight) }

// TestAddWorkerAfterCloseBegan: "ErrClosed once Close has begun" for
// the runtime calls. exec checks the lifecycle on the caller's goroutine
// and then waits for the balancer; when the balancer is busy, the call can
// take effect after Close has fenced the intake. Here the balancer is held
// in a Pick, AddWorker is called, then Close: at the moment the strategy's
// Add runs (the membership change), a Submit already answers ErrClosed, yet
// AddWorker succeeds and a worker joins a draining dispatcher.
func TestAddWorkerAfterCloseBegan(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		// In a bubble, so each step waits for the previous one to be
		// blocked where the test needs it (synctest.Wait), not for a guess
		// at how long that takes.
		synctest.Test(t, func(t *testing.T) {
			g := newGated(t, 2)
			d := bubbleDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithStrategy(g))
			closedAtAdd := make(chan bool, 1)
			g.onAdd = func() {
				_, err := dispatcher.TrySubmit(context.Background(), d, ok(0))
				closedAtAdd <- errors.Is(err, dispatcher.ErrClosed)
			}
			g.armed.Store(true)
			f, err := dispatcher.Submit(context.Background(), d, ok(1))
			require.NoError(t, err)
			<-g.entered // the balancer is inside Pick

			added := make(chan error, 1)
			go func() { _, err := d.AddWorker(1); added <- err }()
			synctest.Wait() // AddWorker is past its lifecycle check, waiting for the balancer

			closed := make(chan error, 1)
			go func() { closed <- d.Close(context.Background()) }()
			synctest.Wait() // Close has fenced the intake and waits for the balancer
			_, err = dispatcher.TrySubmit(context.Background(), d, ok(2))
			require.ErrorIs(t, err, dispatcher.ErrClosed, "Close fences the intake")

			close(g.gate)
			addErr := <-added
			require.NoError(t, <-closed)
			_, err = f.Wait(context.Background())
			require.NoError(t, err)
			select {
			case c := <-closedAtAdd:
				require.False(t, c, "the worker was added while the dispatcher was draining (Submit answered ErrClosed at that moment), and AddWorker returned %v", addErr)
			default:
			}
			require.ErrorIs(t, addErr, dispatcher.ErrClosed)
			<-d.Done()
		})
	})
}
