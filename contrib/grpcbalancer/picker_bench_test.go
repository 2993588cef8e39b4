package grpcbalancer

import (
	"context"
	"fmt"
	"testing"

	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/balancer"
)

// readyPicker stands for a READY pick_first child: it always succeeds.
type readyPicker struct{}

func (readyPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, nil
}

// newTestPicker returns the picker the policy of strategy would send over
// n equal READY members: lock-free or behind the mutex, as the balancer
// chooses.
func newTestPicker(tb testing.TB, strategy string, n int) balancer.Picker {
	pickers := make([]balancer.Picker, n)
	for i := range pickers {
		pickers[i] = readyPicker{}
	}
	cfg := &Config{Strategy: strategy}
	if cur := newCursor(cfg); cur.kind != lfNone {
		sel, ok, err := newSelector(cfg, strategies.Equal(n), cur)
		require.NoError(tb, err)
		if ok {
			return &lockFreePicker{sel: sel, pickers: pickers}
		}
	}
	s, err := strategies.New(strategy, strategies.Equal(n))
	require.NoError(tb, err)
	return &picker{sh: newShared(s, pickers)}
}

// TestPickDoneAllocs: a Pick and its Done allocate nothing on either path.
// The mutex path's Done is pooled, and the race detector makes sync.Pool
// drop objects on purpose, so the count is only meaningful without -race.
func TestPickDoneAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops objects under -race")
	}
	info := balancer.PickInfo{Ctx: context.Background()}
	for _, name := range strategies.Names() {
		p := newTestPicker(t, name, 4)
		allocs := testing.AllocsPerRun(1000, func() {
			r, err := p.Pick(info)
			require.NoError(t, err)
			if r.Done != nil {
				r.Done(balancer.DoneInfo{})
			}
		})
		require.Zero(t, allocs, "%s (%T)", name, p)
	}
}

// TestPickerCountsUntilDone: a pick is pending on its member until the
// call's Done, so least-pending spreads concurrent calls.
func TestPickerCountsUntilDone(t *testing.T) {
	p := newTestPicker(t, "least-pending", 3)
	info := balancer.PickInfo{Ctx: context.Background()}
	var dones []func(balancer.DoneInfo)
	for range 3 {
		r, err := p.Pick(info)
		require.NoError(t, err)
		dones = append(dones, r.Done)
	}
	lp := p.(*picker).sh.s.(interface{ Pending(int) int }) // least-pending counts what is pending
	for i := range 3 {
		require.Equal(t, 1, lp.Pending(i))
	}
	for _, d := range dones {
		d(balancer.DoneInfo{})
	}
	for i := range 3 {
		require.Equal(t, 0, lp.Pending(i))
	}
}

// BenchmarkPick measures a Pick and its Done through the policy's picker,
// from GOMAXPROCS goroutines at once (via=picker): for the lock-free
// strategies an atomic add and a table read; for a concurrent one a read
// lock; for the others the per-channel mutex twice, the strategy,
// time.Now/Since where it reads elapsed, and the pooled Done. via=strategy is the bare strategy's Pick+Done on one goroutine, the
// floor the picker adds to.
func BenchmarkPick(b *testing.B) {
	info := balancer.PickInfo{Ctx: context.Background()}
	for _, name := range strategies.Names() {
		for _, n := range []int{4, 100} {
			b.Run(fmt.Sprintf("strategy=%s/members=%d/via=strategy", name, n), func(b *testing.B) {
				s, err := strategies.New(name, strategies.Equal(n))
				require.NoError(b, err)
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					s.Done(s.Pick(uint64(i)), 0)
				}
			})
			b.Run(fmt.Sprintf("strategy=%s/members=%d/via=picker", name, n), func(b *testing.B) {
				p := newTestPicker(b, name, n)
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						r, err := p.Pick(info)
						if err != nil {
							b.Fatal(err)
						}
						if r.Done != nil {
							r.Done(balancer.DoneInfo{})
						}
					}
				})
			})
		}
	}
}
