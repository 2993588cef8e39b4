package strategies

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// forgetters are the strategies TestForget covers.
var forgetters = []string{"swrr", "least-requests"}

// TestForget: Forget refuses what is not a removed member and changes
// nothing then; Add reuses the lowest forgotten index, never one removed
// and not forgotten; the reused member starts afresh (nothing pending) and
// takes picks; indices forgotten at the end are dropped from Len.
func TestForget(t *testing.T) {
	for _, name := range forgetters {
		t.Run(name, func(t *testing.T) {
			s, err := New(name, []int{1, 2, 3, 4, 5})
			require.NoError(t, err)
			d := s.(Dynamic)
			f := s.(Forgetter)
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

			counts := run(t, s, 7, 2000, 1)
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
			counts = run(t, s, 6, 1800, 2)
			assert.Equal(t, []int{100, 200, 300, 300, 500, 400}, counts, "weights 1 2 3 3 5 4")
			if c, ok := s.(checker); ok {
				require.NoError(t, c.check())
			}
		})
	}
}
