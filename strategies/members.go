package strategies

import "fmt"

// members is the bookkeeping every dynamic strategy shares: each member's
// weight and whether it is present, removed (its index held until Forget)
// or forgotten (its index free for Add), with the validation of changes.
//
// Indices stay dense: Add takes the lowest forgotten index, and forgotten
// indices at the end are dropped, so len(weight) is one more than the
// highest index present or removed and not yet forgotten. A caller that
// forgets what it removes thus keeps every per-member slice, and every
// O(n) change, at the size of its membership, however many members came
// and went before.
type members struct {
	weight  []int
	state   []uint8 // memberPresent, memberRemoved or memberForgotten
	free    []int32 // forgotten indices, a binary min-heap; see add
	present int     // members present, whatever their weight
	live    int     // members present with a positive weight
	total   int64   // sum of present members' weights: int64 so 2^24 members of MaxWeight fit where int is 32 bits
}

const (
	memberPresent   uint8 = iota
	memberRemoved         // Remove: the index waits for Forget
	memberForgotten       // Forget: the index is free for Add
)

func newMembers(weights []int) (members, error) {
	if err := checkWeights(weights); err != nil {
		return members{}, err
	}
	m := members{weight: append([]int(nil), weights...), state: make([]uint8, len(weights)), present: len(weights)}
	for _, w := range weights {
		m.total += int64(w)
		if w > 0 {
			m.live++
		}
	}
	return m, nil
}

// has reports whether i is a present member.
func (m *members) has(i int) bool {
	return i >= 0 && i < len(m.weight) && m.state[i] == memberPresent
}

func (m *members) check(i int) error {
	if !m.has(i) {
		return fmt.Errorf("%w: %d", ErrNoMember, i)
	}
	return nil
}

// next returns the index add would give the next member.
func (m *members) next() int {
	if len(m.free) > 0 && int(m.free[0]) < len(m.weight) {
		return int(m.free[0])
	}
	return len(m.weight)
}

// add adds a member and returns its index: the lowest forgotten one, else
// a new one at the end. The caller resets whatever it keeps for that
// index.
//
// Besides the forgotten indices below len(weight), free may hold stale
// ones at or beyond it, which forget dropped from the end. Every valid one
// is below the end, so when the smallest is not, none is valid and the
// heap is emptied. The end grows only then or when the heap is empty, so a
// stale index never comes back below the end to pass for a valid one.
func (m *members) add(w int) (int, error) {
	if err := checkWeight(w); err != nil {
		return 0, err
	}
	if len(m.free) > 0 && int(m.free[0]) >= len(m.weight) {
		m.free = m.free[:0]
	}
	var i int
	if len(m.free) > 0 {
		i = int(m.popFree())
		m.weight[i], m.state[i] = w, memberPresent
	} else {
		i = len(m.weight)
		m.weight = append(m.weight, w)
		m.state = append(m.state, memberPresent)
	}
	m.present++
	m.total += int64(w)
	if w > 0 {
		m.live++
	}
	return i, nil
}

// remove marks i removed; it refuses to remove the last positive member.
func (m *members) remove(i int) error {
	if err := m.check(i); err != nil {
		return err
	}
	if m.weight[i] > 0 && m.live == 1 {
		return fmt.Errorf("%w: removing member %d", ErrLastMember, i)
	}
	if m.weight[i] > 0 {
		m.live--
	}
	m.present--
	m.total -= int64(m.weight[i])
	m.state[i] = memberRemoved
	return nil
}

// forget frees removed member i's index for a later add, and drops the
// forgotten indices at the end. The caller then cuts its own per-member
// slices to Len (see fit).
func (m *members) forget(i int) error {
	switch {
	case i < 0 || i >= len(m.weight):
		return fmt.Errorf("%w: %d is no member", ErrNotRemoved, i)
	case m.state[i] == memberPresent:
		return fmt.Errorf("%w: %d is present", ErrNotRemoved, i)
	case m.state[i] == memberForgotten:
		return fmt.Errorf("%w: %d is already forgotten", ErrNotRemoved, i)
	}
	m.state[i] = memberForgotten
	m.pushFree(int32(i))
	n := len(m.weight)
	for n > 0 && m.state[n-1] == memberForgotten {
		n--
	}
	m.weight, m.state = m.weight[:n], m.state[:n]
	return nil
}

// setWeight changes i's weight; it refuses to zero the last positive member.
func (m *members) setWeight(i, w int) error {
	if err := m.check(i); err != nil {
		return err
	}
	if err := checkWeight(w); err != nil {
		return err
	}
	old := m.weight[i]
	if old > 0 && w == 0 && m.live == 1 {
		return fmt.Errorf("%w: zeroing member %d", ErrLastMember, i)
	}
	if old == 0 && w > 0 {
		m.live++
	} else if old > 0 && w == 0 {
		m.live--
	}
	m.total += int64(w - old)
	m.weight[i] = w
	return nil
}

// eligible reports whether i may be picked: present with a positive weight.
func (m *members) eligible(i int) bool {
	return m.has(i) && m.weight[i] > 0
}

// Weight returns member i's weight, or 0 when it is not a member.
func (m *members) Weight(i int) int {
	if !m.has(i) {
		return 0
	}
	return m.weight[i]
}

// Len returns one more than the highest index in use: present, or
// removed and not yet forgotten. It is the length an array indexed by
// member needs.
func (m *members) Len() int { return len(m.weight) }

func (m *members) pushFree(i int32) {
	h := append(m.free, i)
	for j := len(h) - 1; j > 0; {
		p := (j - 1) / 2
		if h[p] <= h[j] {
			break
		}
		h[p], h[j] = h[j], h[p]
		j = p
	}
	m.free = h
}

func (m *members) popFree() int32 {
	h := m.free
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for j := 0; ; {
		c := 2*j + 1
		if c >= len(h) {
			break
		}
		if c+1 < len(h) && h[c+1] < h[c] {
			c++
		}
		if h[j] <= h[c] {
			break
		}
		h[j], h[c] = h[c], h[j]
		j = c
	}
	m.free = h
	return top
}

// fit cuts a per-member slice to n members, after a forget dropped the
// indices at the end; a longer slice keeps its array for later adds.
func fit[T any](s []T, n int) []T {
	return s[:min(len(s), n)]
}

// put sets s[i] = x for the member add just gave index i: a reused index
// (i < len(s)) is overwritten, a new one appended.
func put[T any](s []T, i int, x T) []T {
	for len(s) < i {
		var zero T
		s = append(s, zero)
	}
	if i < len(s) {
		s[i] = x
		return s
	}
	return append(s, x)
}
