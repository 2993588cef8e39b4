package grpcbalancer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/balancer"
)

// TestDoneReachesStrategy: on the mutex path a pick stays pending in the
// channel's strategy until its Done, which is pooled, not allocated.
func TestDoneReachesStrategy(t *testing.T) {
	addrs := servers(t, 3)
	ch := openChannel(t, PolicyName("least-pending"), "", addrs, nil)
	p := ch.picker().(*picker)
	lp := p.sh.s.(interface{ Pending(int) int }) // least-pending counts what is pending
	info := balancer.PickInfo{Ctx: context.Background()}
	var dones []func(balancer.DoneInfo)
	for range 6 {
		r, err := p.Pick(info)
		require.NoError(t, err)
		dones = append(dones, r.Done)
	}
	pending := func() (n int) {
		p.sh.mu.Lock()
		defer p.sh.mu.Unlock()
		for i := range 3 {
			n += lp.Pending(i)
			require.LessOrEqual(t, lp.Pending(i), 2, "least-pending spreads them")
		}
		return n
	}
	require.Equal(t, 6, pending())
	for _, d := range dones {
		d(balancer.DoneInfo{})
	}
	require.Equal(t, 0, pending())
	dones[0](balancer.DoneInfo{}) // a second Done of one call is ignored
	require.Equal(t, 0, pending())
}

// TestDoneUnderContention: 64 goroutines Pick and Done at once (run with
// -race), so many Dones find the lock held and are left owed; once the
// last Done has returned, the next holder of the lock settles them all and
// nothing is pending.
func TestDoneUnderContention(t *testing.T) {
	type pender interface{ Pending(int) int }
	for _, name := range strategies.Names() {
		t.Run(name, func(t *testing.T) {
			p, ok := newTestPicker(t, name, 5).(*picker)
			if !ok || p.sh.noDone || p.sh.concurrent {
				t.Skip("no Done reported under the mutex")
			}
			if _, ok := p.sh.s.(pender); !ok {
				t.Skip("no pending count to check")
			}
			var wg sync.WaitGroup
			for g := range 64 {
				wg.Go(func() {
					info := balancer.PickInfo{Ctx: context.Background()}
					var held []func(balancer.DoneInfo)
					for range 500 {
						r, err := p.Pick(info)
						require.NoError(t, err)
						held = append(held, r.Done)
						if len(held) > g%4 { // up to 3 calls in flight per goroutine
							held[0](balancer.DoneInfo{})
							held = held[1:]
						}
					}
					for _, d := range held {
						d(balancer.DoneInfo{})
					}
				})
			}
			wg.Wait()
			p.sh.lock()
			defer p.sh.mu.Unlock()
			require.Nil(t, p.sh.owed.Load())
			for i := range 5 {
				require.Zero(t, p.sh.s.(pender).Pending(i), "member %d", i)
			}
		})
	}
}

// undeclared is a strategy that declares no traits.
type undeclared struct{ strategies.Strategy }

// TestSharedFollowsTraits: the mutex path locks, clocks and reports Done
// as the strategy's declared traits say, for every registered strategy;
// one that declares nothing gets the safe default: locked, clocked, every
// Done reported.
func TestSharedFollowsTraits(t *testing.T) {
	for _, name := range strategies.Names() {
		s, err := strategies.New(name, []int{1, 2})
		require.NoError(t, err)
		tr := strategies.TraitsOf(s)
		sh := newShared(s, nil)
		require.Equal(t, tr.Concurrent, sh.concurrent, name)
		require.Equal(t, tr.IgnoresDone, sh.noDone, name)
		require.Equal(t, !tr.IgnoresElapsed, sh.timed, name)
		sh = newShared(undeclared{s}, nil)
		require.False(t, sh.concurrent, name)
		require.False(t, sh.noDone, name)
		require.True(t, sh.timed, name)
	}
}

// TestUndeclaredGetsDone: a strategy that declares nothing has every call
// reported to it, with its elapsed time, through the pooled Done.
func TestUndeclaredGetsDone(t *testing.T) {
	s, err := strategies.New("least-pending", []int{1, 1})
	require.NoError(t, err)
	rec := &recorder{Strategy: s}
	p := &picker{sh: newShared(rec, []balancer.Picker{readyPicker{}, readyPicker{}})}
	info := balancer.PickInfo{Ctx: context.Background()}
	for range 10 {
		r, err := p.Pick(info)
		require.NoError(t, err)
		require.NotNil(t, r.Done)
		time.Sleep(time.Millisecond)
		r.Done(balancer.DoneInfo{})
	}
	p.sh.lock()
	defer p.sh.mu.Unlock()
	require.Len(t, rec.elapsed, 10)
	for _, e := range rec.elapsed {
		require.GreaterOrEqual(t, e, time.Millisecond, "clocked")
	}
}

// recorder records the elapsed times its Done gets.
type recorder struct {
	strategies.Strategy
	elapsed []time.Duration
}

func (r *recorder) Done(i int, elapsed time.Duration) {
	r.elapsed = append(r.elapsed, elapsed)
	r.Strategy.Done(i, elapsed)
}
