package strategies

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// simulate runs n requests with c in flight against members that serve one
// request at a time in svc[i] each (a FIFO queue per member), reporting the
// real elapsed time to Done, and returns the counts per member.
func simulate(t *testing.T, s Strategy, svc []time.Duration, c, n int) []int {
	t.Helper()
	type flight struct {
		i           int
		start, done time.Duration
	}
	busy := make([]time.Duration, len(svc))
	counts := make([]int, len(svc))
	var fl []flight
	var now time.Duration
	pick := func() {
		i := s.Pick(0)
		require.True(t, i >= 0 && i < len(svc))
		counts[i]++
		busy[i] = max(busy[i], now) + svc[i]
		fl = append(fl, flight{i, now, busy[i]})
	}
	for range c {
		pick()
	}
	for k := c; k < n; k++ {
		e := 0
		for j := range fl {
			if fl[j].done < fl[e].done {
				e = j
			}
		}
		f := fl[e]
		fl[e] = fl[len(fl)-1]
		fl = fl[:len(fl)-1]
		now = f.done
		s.Done(f.i, f.done-f.start)
		pick()
	}
	return counts
}

func TestLatencyPrefersFasterMembers(t *testing.T) {
	svc := []time.Duration{4 * time.Millisecond, time.Millisecond, 2 * time.Millisecond}
	s, err := newLatency(Equal(3))
	require.NoError(t, err)
	counts := simulate(t, s, svc, 8, 20000)
	assert.Greater(t, counts[1], counts[2], "%v", counts)
	assert.Greater(t, counts[2], counts[0], "%v", counts)
	assert.Greater(t, counts[1], 2*counts[0], "%v", counts)
	assert.Positive(t, counts[0], "the slow member is still sampled")
	require.NoError(t, s.check())

	// For contrast, round-robin ignores speed.
	rr, err := newRoundRobin(Equal(3))
	require.NoError(t, err)
	even := simulate(t, rr, svc, 8, 20000)
	assert.InDelta(t, even[0], even[1], 2)
}

func TestLatencyProbesNewMembers(t *testing.T) {
	s, err := newLatency(Equal(2))
	require.NoError(t, err)
	for range 100 {
		i := s.Pick(0)
		s.Done(i, time.Millisecond)
	}
	i, err := s.Add(1)
	require.NoError(t, err)
	require.Equal(t, i, s.Pick(0), "an unknown member is probed first")
	// While its probe is out, it is not picked again.
	for range 10 {
		require.NotEqual(t, i, s.Pick(0))
	}
}
