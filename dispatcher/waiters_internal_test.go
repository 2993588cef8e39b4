package dispatcher

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The waiters ring keeps arrival order across growth, pushes to the front
// and removals from the middle.
func TestWaitersRing(t *testing.T) {
	var q waiters
	chans := make([]chan struct{}, 40)
	for i := range chans {
		chans[i] = make(chan struct{})
	}
	for _, ch := range chans[10:30] {
		q.pushBack(ch)
	}
	for i := 9; i >= 0; i-- {
		q.pushFront(chans[i])
	}
	require.True(t, q.remove(chans[5]))
	require.False(t, q.remove(chans[35]))
	q.pushBack(chans[30])
	var want []chan struct{}
	want = append(want, chans[:5]...)
	want = append(want, chans[6:31]...)
	require.Equal(t, len(want), q.n)
	for _, ch := range want {
		require.Equal(t, ch, q.popFront())
	}
	require.Zero(t, q.n)

	// wakeAll hands each waiter its token and empties the line.
	a, b := q.newChan(), q.newChan()
	q.pushBack(a)
	q.pushFront(b)
	require.Equal(t, 2, q.wakeAll())
	require.Zero(t, q.n)
	require.Len(t, a, 1)
	require.Len(t, b, 1)
}
