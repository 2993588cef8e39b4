package httpbalancer

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/require"
)

// TestChurnKeepsStateBounded: the proxy's bookkeeping holds the live
// backends and the removed ones with requests in flight, not every backend
// ever added, so a proxy whose membership churns (service discovery) does
// not grow, nor walk a growing table on every pick while one is out.
func TestChurnKeepsStateBounded(t *testing.T) {
	p, _ := fakeProxy(t, "least-pending", 2)
	u, _ := url.Parse("http://127.0.0.1:9")
	for range 1000 {
		require.NoError(t, p.Add(u, 1))
		require.NoError(t, p.Remove(u))
	}
	require.Equal(t, 2, len(p.byIndex))
	require.Len(t, p.Stats(), 2)

	// A removed backend stays while its request is in flight, and goes
	// when it is done.
	require.NoError(t, p.Add(u, 1))
	var a *attempt
	for a == nil || a.b.url != u {
		if a != nil {
			p.done(a, false)
		}
		var err error
		a, err = p.pick(0, 0, nil)
		require.NoError(t, err)
	}
	require.NoError(t, p.Remove(u))
	require.Equal(t, 3, len(p.byIndex))
	require.Len(t, p.Stats(), 3)
	p.done(a, false)
	require.Equal(t, 2, len(p.byIndex))
	require.Len(t, p.Stats(), 2)
}

// refusing is a Dynamic strategy that refuses a change when refuse says
// so, to reach the paths where the strategy refuses what the proxy could
// not foresee.
type refusing struct {
	strategies.Dynamic
	refuse func(op string, i, w int) error
}

func (r *refusing) Add(w int) (int, error) {
	if err := r.refuse("add", -1, w); err != nil {
		return 0, err
	}
	return r.Dynamic.Add(w)
}

func (r *refusing) Remove(i int) error {
	if err := r.refuse("remove", i, 0); err != nil {
		return err
	}
	return r.Dynamic.Remove(i)
}

func (r *refusing) SetWeight(i, w int) error {
	if err := r.refuse("set", i, w); err != nil {
		return err
	}
	return r.Dynamic.SetWeight(i, w)
}

func (r *refusing) Weight(i int) int { return r.Dynamic.(weigher).Weight(i) }

var errRefused = errors.New("refused by the test")

// TestUndrainUndoneOnRefusal: to remove or zero the only serving backend
// beside an ejected one, the proxy gives the ejected one its weight back in
// the strategy first; when the strategy then refuses the change anyway, the
// ejected one is drained again, as it was.
func TestUndrainUndoneOnRefusal(t *testing.T) {
	for _, op := range []string{"remove", "set"} {
		t.Run(op, func(t *testing.T) {
			inner, err := strategies.New("least-pending", strategies.Equal(2))
			require.NoError(t, err)
			calls := 0
			s := &refusing{Dynamic: inner.(strategies.Dynamic), refuse: func(o string, i, w int) error {
				if o == op && i == 0 {
					calls++
					if calls == 2 { // the retry after the undrain
						return errRefused
					}
				}
				return nil
			}}
			u0, _ := url.Parse("http://127.0.0.1:1")
			u1, _ := url.Parse("http://127.0.0.1:2")
			p, err := New([]*url.URL{u0, u1}, s)
			require.NoError(t, err)
			t.Cleanup(func() { _ = p.Close() })
			now := time.Unix(1000, 0)
			p.cfg.now = func() time.Time { return now }
			p.ejectIndex(1)
			require.True(t, p.byIndex[1].drained)

			if op == "remove" {
				err = p.Remove(u0)
			} else {
				err = p.SetWeight(u0, 0)
			}
			require.ErrorIs(t, err, errRefused)
			require.Equal(t, 2, calls)
			require.True(t, p.byIndex[1].drained, "drained again")
			require.Zero(t, s.Weight(1), "weight 0 in the strategy again")
			require.Equal(t, 1, s.Weight(0))
			require.Equal(t, 1, p.byIndex[0].weight)
			a, err := p.pick(0, 0, nil)
			require.NoError(t, err)
			require.Equal(t, u0, a.b.url)
		})
	}
}

// TestSetBackendsBesideEjected: a list that leaves only an ejected
// backend with a positive weight is accepted, in either order: it gets its
// weight back in the strategy (pick skips it until its ejection is over).
func TestSetBackendsBesideEjected(t *testing.T) {
	for _, first := range []int{0, 1} {
		p, now := fakeProxy(t, "least-pending", 2)
		u0, u1 := p.byIndex[0].url, p.byIndex[1].url
		p.ejectIndex(1)
		bs := []Backend{{URL: u0, Weight: 0}, {URL: u1, Weight: 3}}
		if first == 1 {
			bs[0], bs[1] = bs[1], bs[0]
		}
		require.NoError(t, p.SetBackends(bs))
		require.Equal(t, 0, p.byIndex[0].weight)
		require.Equal(t, 3, p.byIndex[1].weight)
		_, err := p.pick(0, 0, nil)
		require.ErrorIs(t, err, ErrNoBackend)
		require.Contains(t, err.Error(), "127.0.0.1:2 ejected for 1s more")
		*now = now.Add(time.Second)
		for range 5 {
			a, err := p.pick(0, 0, nil)
			require.NoError(t, err)
			require.Equal(t, u1, a.b.url)
			p.done(a, false)
		}
		require.Equal(t, 3, p.weigher.Weight(1))
	}
}

// TestSetBackendsRemovalRefused: removals come last, once nothing else can
// fail. A strategy that refuses one anyway (none of the strategies package
// does then) gets the rest of the change, and the error names the backend
// that stayed.
func TestSetBackendsRemovalRefused(t *testing.T) {
	inner, err := strategies.New("least-pending", strategies.Equal(3))
	require.NoError(t, err)
	s := &refusing{Dynamic: inner.(strategies.Dynamic), refuse: func(o string, i, w int) error {
		if o == "remove" && i == 1 {
			return errRefused
		}
		return nil
	}}
	var us []*url.URL
	for _, port := range []string{"1", "2", "3", "4"} {
		u, _ := url.Parse("http://127.0.0.1:" + port)
		us = append(us, u)
	}
	p, err := New(us[:3], s)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	err = p.SetBackends([]Backend{{URL: us[3], Weight: 2}})
	require.ErrorIs(t, err, errRefused)
	require.Contains(t, err.Error(), us[1].String())
	var got []string
	for _, st := range p.Stats() {
		got = append(got, st.URL)
	}
	require.Equal(t, []string{us[1].String(), us[3].String()}, got)
}

// TestDrainedWeightAskedOfStrategy: a backend out of service keeps a new
// weight for its re-admission, and the strategy is asked about it at once:
// a weight it refuses (above MaxWeight/64 under slow start) is
// refused by SetWeight and SetBackends, which change nothing, instead of
// being kept and refused at re-admission, which left the backend drained
// for good.
func TestDrainedWeightAskedOfStrategy(t *testing.T) {
	s, err := strategies.New("swrr", strategies.Equal(2), strategies.WithSlowStart(strategies.PickWindow(4), 0.5, 1))
	require.NoError(t, err)
	u0, _ := url.Parse("http://127.0.0.1:1")
	u1, _ := url.Parse("http://127.0.0.1:2")
	p, err := New([]*url.URL{u0, u1}, s)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	now := time.Unix(1000, 0)
	p.cfg.now = func() time.Time { return now }
	p.ejectIndex(1)
	b1 := p.byIndex[1]
	require.True(t, b1.drained)

	huge := strategies.MaxWeight // valid, but too large under slow start, which scales weights up
	require.ErrorIs(t, p.SetWeight(u1, huge), strategies.ErrTooLarge)
	require.ErrorIs(t, p.SetBackends([]Backend{{URL: u0, Weight: 1}, {URL: u1, Weight: huge}}), strategies.ErrTooLarge)
	require.Equal(t, 1, b1.weight)
	require.True(t, b1.drained)
	require.Zero(t, p.weigher.Weight(1))

	require.NoError(t, p.SetWeight(u1, 2))
	require.NoError(t, p.SetBackends([]Backend{{URL: u1, Weight: 3}, {URL: u0, Weight: 1}}))
	require.Equal(t, 3, b1.weight)
	require.True(t, b1.drained, "still out of service")
	require.Zero(t, p.weigher.Weight(1))

	now = now.Add(time.Second)
	seen := map[int]int{}
	for range 40 {
		a, err := p.pick(0, 0, nil)
		require.NoError(t, err)
		seen[a.b.i]++
		p.done(a, false)
	}
	require.False(t, b1.drained)
	require.Equal(t, 3, p.weigher.Weight(1), "re-admitted at its new weight")
	require.Greater(t, seen[1], seen[0])
}
