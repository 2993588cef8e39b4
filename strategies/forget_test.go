package strategies

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// forgetCases are every registered strategy and swrr under slow start,
// built with opts (those a strategy has no use for are left out).
func forgetCases(opts ...Option) map[string]func([]int) (Strategy, error) {
	c := map[string]func([]int) (Strategy, error){}
	build := func(name string, w []int, more ...Option) (Strategy, error) {
		var use []Option
		for _, o := range opts {
			if _, err := New(name, w, append(more, o)...); !errors.Is(err, ErrBadOption) {
				use = append(use, o)
			}
		}
		return New(name, w, append(more, use...)...)
	}
	for _, name := range Names() {
		c[name] = func(w []int) (Strategy, error) { return build(name, w) }
	}
	c["slow-start(swrr)"] = func(w []int) (Strategy, error) {
		return build("swrr", w, WithSlowStart(PickWindow(10), 0.5, 1))
	}
	return c
}

// TestForget: Forget refuses what is not a removed member and changes
// nothing then; Add reuses the lowest forgotten index, never one removed
// and not forgotten; the reused member starts afresh (nothing pending) and
// takes its share; indices forgotten at the end are dropped from Len.
func TestForget(t *testing.T) {
	for name, build := range forgetCases() {
		t.Run(name, func(t *testing.T) {
			s, err := build([]int{1, 2, 3, 4, 5})
			require.NoError(t, err)
			d := s.(Dynamic)
			f, ok := s.(Forgetter)
			require.True(t, ok, "%T is Dynamic but not a Forgetter", s)
			l := s.(interface{ Len() int })
			// Member 1's requests stay pending; the others' complete.
			for range 40 {
				if i := s.Pick(0); i != 1 {
					s.Done(i, time.Millisecond)
				}
			}

			for _, i := range []int{-1, 0, 5, 99} {
				require.ErrorIs(t, f.Forget(i), ErrNotRemoved, "Forget(%d)", i)
			}
			require.NoError(t, d.Remove(1))
			require.NoError(t, d.Remove(3))
			s.Done(1, time.Millisecond) // a draining request: ignored
			i, err := d.Add(7)
			require.NoError(t, err)
			require.Equal(t, 5, i, "removed members are not reused before Forget")

			require.NoError(t, f.Forget(3))
			require.NoError(t, f.Forget(1))
			require.ErrorIs(t, f.Forget(1), ErrNotRemoved, "forgotten twice")
			require.ErrorIs(t, d.Remove(1), ErrNoMember, "a forgotten member is no member")
			require.ErrorIs(t, d.SetWeight(1, 1), ErrNoMember)
			i, err = d.Add(2)
			require.NoError(t, err)
			require.Equal(t, 1, i, "the lowest forgotten index")
			if p, ok := s.(interface{ Pending(int) int }); ok {
				require.Zero(t, p.Pending(1), "a reused index starts with nothing pending")
			}
			i, err = d.Add(3)
			require.NoError(t, err)
			require.Equal(t, 3, i)
			i, err = d.Add(1)
			require.NoError(t, err)
			require.Equal(t, 6, i, "no forgotten index left: a new one")
			counts := run(t, s, 7, 4000, 1)
			for j, w := range []int{1, 2, 3, 4, 5, 7, 1} {
				assert.Positive(t, counts[j], "member %d (weight %d) never picked: %v", j, w, counts)
			}

			// Forgetting the last indices shortens the member arrays.
			require.NoError(t, d.Remove(6))
			require.NoError(t, d.Remove(5))
			require.NoError(t, f.Forget(5))
			require.Equal(t, 7, l.Len(), "6 is removed but not forgotten")
			require.NoError(t, f.Forget(6))
			require.Equal(t, 5, l.Len())
			i, err = d.Add(4)
			require.NoError(t, err)
			require.Equal(t, 5, i)
			if c, ok := s.(checker); ok {
				require.NoError(t, c.check())
			}
			// The shares are the strategy's over the weights now, the reused
			// indices' included.
			weights := []int{1, 2, 3, 3, 5, 4}
			b, ok := behaviour[name]
			if !ok {
				b = behaviour["swrr"]
			}
			if b.share == some {
				return
			}
			if ss, ok := s.(*slowStart); ok {
				for ss.Ramping(5) { // let the newcomer's ramp end
					s.Done(s.Pick(0), time.Millisecond)
				}
			}
			const n = 36000
			counts = run(t, s, len(weights), n, 2)
			for j, w := range weights {
				want := float64(w) / float64(sum(weights))
				if b.share == even {
					want = 1.0 / float64(len(weights))
				}
				assert.InDelta(t, want, float64(counts[j])/n, b.tol*want, "member %d (weight %d): %v", j, w, counts)
			}
		})
	}
}

// A slow start over a Dynamic strategy that cannot forget says so, and
// changes nothing.
func TestSlowStartForgetUnsupported(t *testing.T) {
	build := func(w []int, _ ...Option) (Strategy, error) {
		s, err := newSWRR(w)
		return noForget{s}, err
	}
	s, err := newSlowStart(build, []int{1, 1}, PickWindow(4), 0.5, 1)
	require.NoError(t, err)
	require.NoError(t, s.Remove(1))
	err = s.Forget(1)
	require.ErrorIs(t, err, errors.ErrUnsupported)
	require.ErrorIs(t, s.Forget(1), errors.ErrUnsupported, "still removed, not forgotten")
	i, err := s.Add(1)
	require.NoError(t, err)
	require.Equal(t, 2, i)
}

// noForget is a Dynamic strategy without Forget.
type noForget struct{ Dynamic }
