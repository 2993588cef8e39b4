package strategies

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nginxRef is nginx's ngx_http_upstream_get_peer written plainly, with its
// own current weights: the strategy must match it pick for pick.
func nginxRef(w []int, n int) []int {
	cur := make([]int, len(w))
	total := sum(w)
	out := make([]int, n)
	for k := range out {
		best := -1
		for i := range w {
			if w[i] == 0 {
				continue
			}
			cur[i] += w[i]
			if best < 0 || cur[i] > cur[best] {
				best = i
			}
		}
		cur[best] -= total
		out[k] = best
	}
	return out
}

func nginxPicks(t *testing.T, s Strategy, n int) []int {
	t.Helper()
	out := make([]int, n)
	for k := range out {
		out[k] = s.Pick(0)
	}
	return out
}

func TestNginxSWRRSequence(t *testing.T) {
	s, err := NewNginxSWRR([]int{5, 1, 1})
	require.NoError(t, err)
	// nginx's own example: a a b a c a a.
	assert.Equal(t, []int{0, 0, 1, 0, 2, 0, 0, 0, 0, 1, 0, 2, 0, 0}, nginxPicks(t, s, 14))

	// By hand for 3,2 (W = 5), current weights after adding, then the
	// winner's after subtracting 5:
	// (3,2)→a (-2,2); (1,4)→b (1,-1); (4,1)→a (-1,1); (2,3)→b (2,-2);
	// (5,0)→a (0,0): a b a b a, then it repeats.
	s, err = NewNginxSWRR([]int{3, 2})
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 0, 1, 0, 0, 1, 0, 1, 0}, nginxPicks(t, s, 10))
}

func TestNginxSWRRMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	for range 200 {
		w := make([]int, 1+r.IntN(12))
		for i := range w {
			w[i] = r.IntN(20)
		}
		w[r.IntN(len(w))]++
		s, err := NewNginxSWRR(w)
		require.NoError(t, err)
		n := 3 * sum(w)
		require.Equal(t, nginxRef(w, n), nginxPicks(t, s, n), "weights %v", w)
	}
}

// A change restarts the sequence with the new weights, as a reload does:
// the picks after it are a fresh nginx's, so nobody bursts.
func TestNginxSWRRChangeRestarts(t *testing.T) {
	s, err := NewNginxSWRR([]int{1, 9})
	require.NoError(t, err)
	nginxPicks(t, s, 8)
	require.NoError(t, s.SetWeight(0, 7))
	n := 4 * 16
	assert.Equal(t, nginxRef([]int{7, 9}, n), nginxPicks(t, s, n))
	i, err := s.Add(4)
	require.NoError(t, err)
	require.Equal(t, 2, i)
	require.NoError(t, s.Remove(1))
	n = 4 * 11
	after := nginxPicks(t, s, n)
	assert.Equal(t, nginxRef([]int{7, 0, 4}, n), after)
	assert.Less(t, MaxLag([]int{7, 0, 4}, after), 1.0)
	require.NoError(t, s.SetWeight(2, 0)) // drains member 2
	for _, i := range nginxPicks(t, s, 10) {
		assert.Equal(t, 0, i)
	}
}

func TestNginxSWRRAllocatesNothing(t *testing.T) {
	s, err := NewNginxSWRR([]int{5, 1, 1, 3})
	require.NoError(t, err)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { s.Done(s.Pick(0), time.Microsecond) }))
}

func TestNginxSWRRBadInput(t *testing.T) {
	_, err := NewNginxSWRR(nil)
	require.ErrorIs(t, err, ErrNoMembers)
	_, err = NewNginxSWRR([]int{1, -1})
	require.ErrorIs(t, err, ErrNegativeWeight)
	_, err = NewNginxSWRR([]int{1}, WithDecay(0.5))
	require.ErrorIs(t, err, ErrBadOption)
}
