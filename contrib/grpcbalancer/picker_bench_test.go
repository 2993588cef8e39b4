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

func newTestPicker(tb testing.TB, strategy string, n int) *picker {
	s, err := strategies.New(strategy, strategies.Equal(n))
	require.NoError(tb, err)
	pickers := make([]balancer.Picker, n)
	for i := range pickers {
		pickers[i] = readyPicker{}
	}
	return &picker{sh: &shared{s: s, pickers: pickers}}
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
	lp := p.sh.s.(*strategies.LeastPending)
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

// BenchmarkPick measures a Pick and its Done through the picker, from
// GOMAXPROCS goroutines at once (via=picker): the cost of the per-channel
// mutex, the strategy, time.Now/Since and the Done closure (one
// allocation). via=strategy is the bare strategy's Pick+Done on one
// goroutine, the floor the picker adds to.
func BenchmarkPick(b *testing.B) {
	info := balancer.PickInfo{Ctx: context.Background()}
	for _, name := range strategies.Names() {
		for _, n := range []int{4, 100} {
			b.Run(fmt.Sprintf("strategy=%s/members=%d/via=strategy", name, n), func(b *testing.B) {
				s := newTestPicker(b, name, n).sh.s
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
						r.Done(balancer.DoneInfo{})
					}
				})
			})
		}
	}
}
