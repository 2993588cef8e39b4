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
		chans[i] = make(chan struct{}, 1)
	}
	for _, ch := range chans[10:30] {
		q.pushBack(ch, nil)
	}
	for i := 9; i >= 0; i-- {
		q.pushFront(chans[i], nil)
	}
	require.True(t, q.remove(chans[5]))
	require.False(t, q.remove(chans[35]))
	q.pushBack(chans[30], nil)
	var want []chan struct{}
	want = append(want, chans[:5]...)
	want = append(want, chans[6:31]...)
	require.Equal(t, len(want), q.n)
	for _, ch := range want {
		q.wakeFront()
		require.Len(t, ch, 1, "woken in line order")
		<-ch
	}
	require.Zero(t, q.n)

	// wakeAll hands each waiter its token and empties the line.
	a, b := q.newChan(), q.newChan()
	q.pushBack(a, nil)
	q.pushFront(b, nil)
	require.Equal(t, 2, q.wakeAll())
	require.Zero(t, q.n)
	require.Len(t, a, 1)
	require.Len(t, b, 1)
}

// wakeIf wakes the waiters of the lanes it accepts, in line order, keeps
// the others in order, and keeps the lanes' counts of waiters and offers.
func TestWaitersWakeIf(t *testing.T) {
	var q waiters
	var flood, quiet lane
	chans := make([]chan struct{}, 6)
	lanes := []*lane{&flood, &quiet, &flood, nil, &quiet, &flood}
	for i := range chans {
		chans[i] = make(chan struct{}, 1)
		q.pushBack(chans[i], lanes[i])
	}
	require.Equal(t, int32(5), q.lanes.Load())
	require.Equal(t, 3, flood.waiting)
	require.Equal(t, 2, quiet.waiting)

	require.Equal(t, 2, q.wakeIf(func(l *lane) (bool, bool) { return l == &quiet, true }))
	require.Len(t, chans[1], 1)
	require.Len(t, chans[4], 1)
	require.Zero(t, quiet.waiting)
	require.Equal(t, 2, quiet.offered)
	require.Equal(t, int32(3), q.lanes.Load())
	for _, i := range []int{0, 2, 3, 5} {
		q.wakeFront()
		require.Len(t, chans[i], 1, "the rest keep their order")
	}
	require.Zero(t, q.n)
	require.Zero(t, flood.waiting)
	require.Zero(t, q.lanes.Load())
}
