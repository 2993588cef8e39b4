package strategies

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHeapPopsInOrder: every instantiation of the heap pops random keys in
// order. (The one-word branch-free sift once read its keys at 16-byte
// strides, which is wrong where an entry is 12 bytes: 386, arm.)
func TestHeapPopsInOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 7))
	keys := make([]uint64, 1000)
	for i := range keys {
		keys[i] = r.Uint64() >> r.IntN(64)
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	popAll := func(push func(i int, k uint64), pop func() uint64, check func() error) []uint64 {
		for i, k := range keys {
			push(i, k)
		}
		out := make([]uint64, 0, len(keys))
		for range keys {
			out = append(out, pop())
			require.NoError(t, check())
		}
		return out
	}
	var hb heap[uint64, borrows]
	require.Equal(t, want, popAll(func(i int, k uint64) { hb.push(i, k) }, func() uint64 { return hb.pop().key }, hb.check))
	var hr heap[uint64, branches]
	require.Equal(t, want, popAll(func(i int, k uint64) { hr.push(i, k) }, func() uint64 { return hr.pop().key }, hr.check))
	var hp heap[pair, borrows]
	require.Equal(t, want, popAll(func(i int, k uint64) { hp.push(i, pair{k, 0}) }, func() uint64 { return hp.pop().key.hi }, hp.check))
}
