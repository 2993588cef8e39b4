package strategies

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nginxReference is ngx_http_upstream_get_peer's loop as nginx writes it,
// with no failures (the effective weight is the weight) and a weight of 0
// standing for a peer that is down: it neither gains nor counts in total.
// It is the test oracle for nginxSWRR, kept as close to the C as Go allows.
func nginxReference(weights []int, picks int) []int {
	return nginxFrom(weights, make([]int, len(weights)), picks)
}

func TestNginxSWRRPinned(t *testing.T) {
	for _, tc := range []struct {
		weights []int
		want    []int
	}{
		// nginx's own example, from the commit that made its WRR smooth.
		{[]int{5, 1, 1}, []int{0, 0, 1, 0, 2, 0, 0, 0, 0, 1, 0, 2, 0, 0}},
		// By hand, W = 5, current weights after adding, then after the pick:
		//   1: 2 2 1, tie to a:    -3  2  1
		//   2: -1 4 2, b:          -1 -1  2
		//   3: 1 1 3, c:            1  1 -2
		//   4: 3 3 -1, tie to a:   -2  3 -1
		//   5: 0 5 0, b:            0  0  0, back to the start.
		{[]int{2, 2, 1}, []int{0, 1, 2, 0, 1, 0, 1, 2, 0, 1}},
		// A drained member gains nothing and is skipped: 5,1,1 again.
		{[]int{5, 0, 1, 1}, []int{0, 0, 2, 0, 3, 0, 0}},
	} {
		s, err := newNginxSWRR(tc.weights)
		require.NoError(t, err)
		assert.Equal(t, tc.want, picksOf(s, len(tc.want)), "%v", tc.weights)
		byName, err := New("nginx-swrr", tc.weights)
		require.NoError(t, err)
		assert.Equal(t, tc.want, picksOf(byName, len(tc.want)), "New(nginx-swrr, %v)", tc.weights)
	}
}

func TestNginxSWRRIsNginxOnRandomWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	for range 200 {
		w := make([]int, 1+r.IntN(40))
		for i := range w {
			if r.IntN(6) > 0 {
				w[i] = r.IntN(1 + r.IntN(300))
			}
		}
		w[r.IntN(len(w))]++
		n := 3*sum(w) + r.IntN(50)
		s, err := newNginxSWRR(w)
		require.NoError(t, err)
		require.Equal(t, nginxReference(w, n), picksOf(s, n), "weights %v", w)
		require.NoError(t, s.check())
	}
}

func TestNginxSWRRPickAllocatesNothing(t *testing.T) {
	s, err := newNginxSWRR([]int{5, 1, 1, 30, 7, 0, 2})
	require.NoError(t, err)
	seen := map[int]bool{}
	allocs := testing.AllocsPerRun(1000, func() { seen[s.Pick(0)] = false })
	assert.Zero(t, allocs)
	assert.Len(t, seen, 6, "every positive member picked")
}

func TestNginxSWRRErrors(t *testing.T) {
	for _, tc := range []struct {
		weights []int
		want    error
	}{
		{nil, ErrNoMembers},
		{[]int{2, -1}, ErrNegativeWeight},
		{[]int{0, 0}, ErrAllZero},
		{[]int{1, MaxWeight + 1}, ErrTooLarge},
	} {
		_, err := newNginxSWRR(tc.weights)
		require.ErrorIs(t, err, tc.want, "%v", tc.weights)
		_, swrrErr := newSWRR(tc.weights)
		assert.Equal(t, swrrErr.Error(), err.Error(), "same error as swrr for %v", tc.weights)
	}
	_, err := newNginxSWRR([]int{1}, WithVirtualNodes(10))
	require.ErrorIs(t, err, ErrBadOption)
	_, err = newNginxSWRR([]int{1}, WithSeed(3))
	require.NoError(t, err, "WithSeed is accepted by every strategy")

	w := make([]int, nginxMaxMembers)
	w[7] = 1
	s, err := newNginxSWRR(w)
	require.NoError(t, err)
	_, err = s.Add(1)
	require.ErrorIs(t, err, ErrTooLarge, "a member beyond the bound of the arithmetic")
	require.NoError(t, s.Remove(3))
	_, err = s.Add(1)
	require.NoError(t, err, "a removed member makes room")
	_, err = newNginxSWRR(append(w, 1))
	require.ErrorIs(t, err, ErrTooLarge)
}

// A change that moves no debt and keeps W changes nothing: the sequence
// goes on as if there had been no change.
func TestNginxSWRRNeutralChanges(t *testing.T) {
	w := []int{7, 3, 3, 1}
	want := nginxReference(w, 60)
	s, err := newNginxSWRR(w)
	require.NoError(t, err)
	got := picksOf(s, 25)
	require.NoError(t, s.SetWeight(1, 3)) // the same weight
	z, err := s.Add(0)                    // a drained newcomer
	require.NoError(t, err)
	got = append(got, picksOf(s, 20)...)
	require.NoError(t, s.Remove(z))
	got = append(got, picksOf(s, 15)...)
	assert.Equal(t, want, got)
}

// rescale's arithmetic against math/big, over random values up to its
// bounds: ⌊a·b/d⌋ with the remainder in [0, d).
func TestMulFloorDiv(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for k := range 20000 {
		d := 1 + r.Uint64N(1<<60)
		b := r.Uint64N(1 << 40)
		a := r.Int64N(1<<62) - (1 << 61)
		if k%3 == 0 {
			a, b, d = r.Int64N(2001)-1000, r.Uint64N(100), 1+r.Uint64N(100)
		}
		if d < 4*b && k%3 != 0 {
			continue // the quotient might not fit; rescale never asks that
		}
		q, rem := mulFloorDiv(a, b, d)
		num := new(big.Int).Mul(big.NewInt(a), new(big.Int).SetUint64(b))
		wq, wr := new(big.Int).DivMod(num, new(big.Int).SetUint64(d), new(big.Int))
		require.Equal(t, wq.Int64(), q, "%d·%d/%d", a, b, d)
		require.Equal(t, wr.Uint64(), rem, "%d·%d mod %d", a, b, d)
	}
}
