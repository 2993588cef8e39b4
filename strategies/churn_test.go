package strategies

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// churner drives a strategy through membership churn: each cycle adds a
// member with the weight of the oldest one, removes the oldest and forgets
// it, so the weights present stay the same while every member is replaced
// again and again.
type churner struct {
	d    Dynamic
	f    Forgetter
	live []int // present members, by slot: slot h is the oldest
	w    []int // weight of each slot's member
	h    int
}

func newChurner(tb testing.TB, name string, w []int, opts ...Option) *churner {
	s, err := New(name, w, opts...)
	require.NoError(tb, err)
	c := &churner{d: s.(Dynamic), f: s.(Forgetter), w: w}
	for i := range w {
		c.live = append(c.live, i)
	}
	return c
}

// replace adds a member in place of the oldest, removes the oldest and
// returns the index it had, without forgetting it.
func (c *churner) replace() (old int, err error) {
	old = c.live[c.h]
	i, err := c.d.Add(c.w[c.h])
	if err != nil {
		return old, err
	}
	if err := c.d.Remove(old); err != nil {
		return old, err
	}
	c.live[c.h] = i
	c.h = (c.h + 1) % len(c.live)
	return old, nil
}

// cycle is one Add, Remove and Forget.
func (c *churner) cycle() error {
	old, err := c.replace()
	if err != nil {
		return err
	}
	return c.f.Forget(old)
}

// sliceSizes returns the length and capacity of every slice reachable from
// v through structs, arrays, and pointers and interfaces to this package's
// types, by field path.
func sliceSizes(v any) map[string][2]int {
	out := map[string][2]int{}
	pkg := reflect.TypeFor[members]().PkgPath()
	seen := map[uintptr]bool{}
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if v.IsNil() {
				return
			}
			if v.Kind() == reflect.Pointer {
				if v.Type().Elem().PkgPath() != pkg || seen[v.Pointer()] {
					return
				}
				seen[v.Pointer()] = true
			}
			walk(v.Elem(), path)
		case reflect.Struct:
			for k := range v.NumField() {
				walk(v.Field(k), path+"."+v.Type().Field(k).Name)
			}
		case reflect.Array:
			for k := range v.Len() {
				walk(v.Index(k), fmt.Sprintf("%s[%d]", path, k))
			}
		case reflect.Slice:
			out[path] = [2]int{v.Len(), v.Cap()}
		}
	}
	walk(reflect.ValueOf(v), "")
	return out
}

// TestChurnBounded: 20 000 cycles of Add, Remove and Forget over 8
// members, with picks in between whose requests are still pending when
// their member is removed (Done comes after the Remove, and the Forget one
// cycle later). Add never returns an index that is removed and not yet
// forgotten; Len stays at the live members plus the one draining plus the
// one just forgotten; and no slice the strategy holds, the per-member
// arrays, heaps, wheels, rings and tables included, grows beyond what the
// first 200 cycles needed plus the member count. Without Forget (the
// control), Len and the slices grow with every cycle.
func TestChurnBounded(t *testing.T) {
	const n, warm, cycles = 8, 200, 20000
	w := []int{1, 2, 3, 4, 5, 6, 7, 8}
	// Few ring points, so the rings' O(points) changes keep the test short.
	for name, build := range forgetCases(WithVirtualNodes(4)) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := build(w)
			require.NoError(t, err)
			c := &churner{d: s.(Dynamic), f: s.(Forgetter), w: w, live: []int{0, 1, 2, 3, 4, 5, 6, 7}}
			l := s.(interface{ Len() int })
			maxSize := map[string][2]int{}
			var pending []int // picks not yet completed
			draining := -1    // removed last cycle, forgotten this one
			for k := range warm + cycles {
				for j := range 3 {
					i := s.Pick(uint64(k*3 + j))
					if !slices.Contains(c.live, i) {
						require.Failf(t, "bad pick", "cycle %d: picked %d, not present", k, i)
					}
					pending = append(pending, i)
				}
				// Complete all but the newest two, so the oldest member
				// usually has one pending when it goes.
				for len(pending) > 2 {
					s.Done(pending[0], time.Millisecond)
					pending = pending[1:]
				}
				old, err := c.replace()
				if err != nil || c.live[(c.h+n-1)%n] == draining {
					require.Failf(t, "bad change", "cycle %d: %v, or Add reused %d before its Forget", k, err, draining)
				}
				for j, i := range pending { // the removed member's requests complete after its Remove
					if i == old {
						s.Done(i, time.Millisecond)
						pending[j] = -1
					}
				}
				pending = slices.DeleteFunc(pending, func(i int) bool { return i < 0 })
				if draining >= 0 {
					if err := c.f.Forget(draining); err != nil {
						require.Failf(t, "Forget failed", "cycle %d: %v", k, err)
					}
				}
				draining = old
				if l.Len() > n+2 {
					require.Failf(t, "Len grows", "cycle %d: Len %d with %d members present", k, l.Len(), n)
				}
				sizes := sliceSizes(s)
				if k < warm {
					for p, x := range sizes {
						m := maxSize[p]
						maxSize[p] = [2]int{max(m[0], x[0]), max(m[1], x[1])}
					}
					continue
				}
				if k%1000 != 0 && k != warm+cycles-1 {
					continue
				}
				for p, x := range sizes {
					m := maxSize[p]
					require.LessOrEqual(t, x[0], m[0]+n, "cycle %d: len of %s", k, p)
					require.LessOrEqual(t, x[1], 2*m[1]+n, "cycle %d: cap of %s", k, p)
				}
			}
			if ck, ok := s.(checker); ok {
				require.NoError(t, ck.check())
			}
		})
	}
	t.Run("control without Forget", func(t *testing.T) {
		t.Parallel()
		c := newChurner(t, "swrr", w)
		before := sliceSizes(c.d)
		for range 1000 {
			_, err := c.replace()
			require.NoError(t, err)
		}
		assert.Equal(t, n+1000, c.d.(*swrr).Len())
		after := sliceSizes(c.d)
		assert.GreaterOrEqual(t, after[".members.weight"][0], before[".members.weight"][0]+1000)
		assert.GreaterOrEqual(t, after[".ent"][0], before[".ent"][0]+1000)
	})
}
