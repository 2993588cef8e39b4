package httpbalancer

import (
	"net/url"
	"testing"
	"time"

	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/require"
)

// TestEjectDrainsAndRestores: an ejected backend of a Dynamic strategy is
// drained (never picked) until its time is over, then gets its weight back;
// the last backend cannot be drained and is skipped instead.
func TestEjectDrainsAndRestores(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1")
	s, err := strategies.New("least-pending", []int{1, 1, 1})
	require.NoError(t, err)
	p, err := New([]*url.URL{u, u, u}, s, WithEjectFor(time.Second))
	require.NoError(t, err)
	now := time.Unix(1000, 0)
	p.cfg.now = func() time.Time { return now }

	p.eject(1)
	require.Equal(t, 1, p.nDrained)
	for range 30 {
		a, err := p.pick(0, 0, -1)
		require.NoError(t, err)
		require.NotEqual(t, 1, a.i, "drained backend picked")
		p.done(a)
	}

	p.eject(0)
	p.eject(2) // the last positive member: refused, so it is only skipped
	require.Equal(t, 2, p.nDrained)
	_, err = p.pick(0, 0, -1)
	require.ErrorIs(t, err, ErrNoBackend)

	now = now.Add(time.Second)
	seen := map[int]bool{}
	for range 30 {
		a, err := p.pick(0, 0, -1)
		require.NoError(t, err)
		seen[a.i] = true
		p.done(a)
	}
	require.Zero(t, p.nDrained)
	require.Equal(t, map[int]bool{0: true, 1: true, 2: true}, seen, "weights restored")
}
