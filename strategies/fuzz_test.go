package strategies

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FuzzStrategy drives a strategy from a byte string: the first byte picks
// the strategy, the next bytes the weights, then each byte is one operation
// (pick, done, add, remove and forget, re-weight). Whatever the sequence,
// a pick is a present member with a positive weight, Add returns the
// lowest forgotten index (else a new one) and the heaps stay valid.
func FuzzStrategy(f *testing.F) {
	names := Names()
	for k := range names {
		f.Add([]byte{byte(k), 3, 1, 0, 2, 0, 0, 1, 4, 5, 6, 7, 0x15, 0x26, 0x37, 0, 1, 4})
		f.Add([]byte{byte(k), 1, 5, 0, 6, 5, 0, 0x0e, 0, 0x0f, 4, 0, 0})
	}
	f.Fuzz(fuzzBody)
}

func fuzzBody(t *testing.T, data []byte) {
	names := Names()
	{
		if len(data) < 3 {
			return
		}
		name := names[int(data[0])%len(names)]
		n := 1 + int(data[1])%6
		data = data[2:]
		w := make([]int, n)
		for i := range w {
			if len(data) > 0 {
				w[i] = int(data[0]) % 5
				data = data[1:]
			}
		}
		if sum(w) == 0 {
			w[0] = 1
		}
		s, err := New(name, w, WithSeed(uint64(len(data))))
		require.NoError(t, err)
		d := s.(Dynamic)
		weight := append([]int(nil), w...)
		removed := make([]bool, n)
		forgotten := make([]bool, n)
		var out []int
		for k, b := range data {
			arg := int(b >> 3)
			switch b % 8 {
			case 0, 1, 2, 3:
				i := s.Pick(uint64(arg) * 0x9e3779b97f4a7c15)
				require.True(t, i >= 0 && i < len(weight), "%s: pick %d out of range", name, i)
				require.False(t, removed[i], "%s: removed member %d picked", name, i)
				require.Positive(t, weight[i], "%s: zero-weight member %d picked", name, i)
				out = append(out, i)
			case 4:
				if len(out) > 0 {
					j := arg % len(out)
					s.Done(out[j], time.Duration(arg+1)*time.Millisecond)
					out = append(out[:j], out[j+1:]...)
				}
			case 5:
				i, err := d.Add(arg % 5)
				require.NoError(t, err)
				want := slices.Index(forgotten, true)
				if want < 0 {
					want = len(weight)
					weight = append(weight, 0)
					removed = append(removed, false)
					forgotten = append(forgotten, false)
				}
				require.Equal(t, want, i, "%s: Add", name)
				weight[i], removed[i], forgotten[i] = arg%5, false, false
			case 6:
				// Remove, and with an odd argument forget at once: the
				// member's requests still pending are given up.
				i := arg % len(weight)
				if d.Remove(i) == nil {
					removed[i] = true
				}
				if arg%2 == 1 && removed[i] && !forgotten[i] {
					require.NoError(t, s.(Forgetter).Forget(i))
					forgotten[i] = true
					out = slices.DeleteFunc(out, func(j int) bool { return j == i })
				}
			case 7:
				i := arg % len(weight)
				nw := int(data[(k+1)%len(data)]) % 4
				if d.SetWeight(i, nw) == nil {
					weight[i] = nw
				}
			}
			if c, ok := s.(checker); ok {
				require.NoError(t, c.check())
			}
		}
	}
}

// TestLeastPendingTicksRenumbered runs two least-pending strategies side by
// side, one with its ticks moved just below the 40-bit limit, so that it
// renumbers them mid-run: the picks must not change.
func TestLeastPendingTicksRenumbered(t *testing.T) {
	w := []int{3, 1, 0, 2, 5, 1, 1}
	a, err := newLeastPending(w)
	require.NoError(t, err)
	b, err := newLeastPending(w)
	require.NoError(t, err)
	off := uint64(lpMaxTick - 20)
	for i := range b.ent {
		b.ent[i].last += off
	}
	for j := range b.h.e {
		b.h.e[j].key = b.ent[b.h.e[j].idx].key()
	}
	b.tick += off
	var out []int
	for k := range 200 {
		i := a.Pick(0)
		require.Equal(t, i, b.Pick(0), "pick %d", k)
		out = append(out, i)
		if k%3 != 2 {
			j := out[(k*7)%len(out)]
			a.Done(j, 0)
			b.Done(j, 0)
		}
		if k == 50 {
			_, err := a.Add(2)
			require.NoError(t, err)
			_, err = b.Add(2)
			require.NoError(t, err)
		}
		require.NoError(t, b.check())
	}
	require.Less(t, b.tick, off, "never renumbered")
}
