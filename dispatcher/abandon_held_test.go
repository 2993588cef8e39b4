package dispatcher_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
)

// scripted is a dynamic strategy that picks from a script, one index per
// Pick; gateAt makes the Pick with that number (0-based) block until gate is
// closed (entered is closed when it starts waiting).
type scripted struct {
	mu      sync.Mutex
	script  []int
	n       int
	gateAt  int
	entered chan struct{}
	gate    chan struct{}
}

func (s *scripted) Pick(uint64) int {
	s.mu.Lock()
	k := s.n
	s.n++
	i := s.script[k%len(s.script)]
	s.mu.Unlock()
	if k == s.gateAt {
		close(s.entered)
		<-s.gate
	}
	return i
}
func (s *scripted) Done(int, time.Duration)  {}
func (s *scripted) Add(int) (int, error)     { return -1, nil }
func (s *scripted) Remove(int) error         { return nil }
func (s *scripted) SetWeight(int, int) error { return nil }

// TestAbandonAnswersRedispatchedHeld: Close's deadline answers every
// request not yet running ("taken back from the workers' queues"). Here a
// request held for worker 0 is re-picked when worker 0 is removed, and
// Close's deadline passes while that re-pick is under way; the request
// lands behind a task that never ends on worker 1. It must be answered
// with ErrClosed at once, not when worker 1's task ends.
func TestAbandonAnswersRedispatchedHeld(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		s := &scripted{script: []int{0, 0, 1, 0, 1}, gateAt: 4, entered: make(chan struct{}), gate: make(chan struct{})}
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithWorkers(2), dispatcher.WithWorkerBuffer(1), dispatcher.WithStrategy(s))
		require.NoError(t, err)
		release := make(chan struct{})
		defer func() {
			select {
			case <-release:
			default:
				close(release)
			}
			within(t, 10*time.Second, "Done", func() { <-d.Done() })
		}()
		var fs []*dispatcher.Future[int]
		for range 4 { // A, B → worker 0 (full), C → worker 1, D → worker 0: held
			f, err := dispatcher.Submit(context.Background(), d, blocker(release))
			require.NoError(t, err)
			fs = append(fs, f)
		}
		require.Eventually(t, func() bool { st := d.Stats(); return st.Held && st.Pending == 3 }, 5*time.Second, time.Millisecond)

		removed := make(chan error, 1)
		go func() { removed <- d.RemoveWorker(0) }() // re-picks D: Pick #4 blocks
		within(t, 5*time.Second, "re-pick starts", func() { <-s.entered })
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		within(t, 5*time.Second, "Close with deadline", func() { require.ErrorIs(t, d.Close(ctx), context.DeadlineExceeded) })
		close(s.gate) // D goes to worker 1, behind C
		within(t, 5*time.Second, "RemoveWorker", func() { <-removed })

		for k, name := range map[int]string{1: "B (queued at removed worker 0)", 3: "D (re-picked to worker 1)"} {
			select {
			case <-fs[k].Done():
				_, err := fs[k].Wait(context.Background())
				require.ErrorIs(t, err, dispatcher.ErrClosed, name)
			case <-time.After(2 * time.Second):
				t.Fatalf("%s not answered 2 s after Close's deadline abandoned it (it waits behind a running task)", name)
			}
		}
	})
}
