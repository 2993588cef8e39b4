package strategies

import "fmt"

// members is the bookkeeping every dynamic strategy shares: each member's
// weight and whether it is still present, with the validation of changes.
// Indices are never reused.
type members struct {
	weight  []int
	removed []bool
	live    int   // members present with a positive weight
	total   int64 // sum of present members' weights: int64 so 2^24 members of MaxWeight fit where int is 32 bits
}

func newMembers(weights []int) (members, error) {
	if err := checkWeights(weights); err != nil {
		return members{}, err
	}
	m := members{weight: append([]int(nil), weights...), removed: make([]bool, len(weights))}
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
	return i >= 0 && i < len(m.weight) && !m.removed[i]
}

func (m *members) check(i int) error {
	if !m.has(i) {
		return fmt.Errorf("%w: %d", ErrNoMember, i)
	}
	return nil
}

// add appends a member and returns its index.
func (m *members) add(w int) (int, error) {
	if err := checkWeight(w); err != nil {
		return 0, err
	}
	m.weight = append(m.weight, w)
	m.removed = append(m.removed, false)
	m.total += int64(w)
	if w > 0 {
		m.live++
	}
	return len(m.weight) - 1, nil
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
	m.total -= int64(m.weight[i])
	m.removed[i] = true
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

// Len returns the number of indices handed out, removed ones included.
func (m *members) Len() int { return len(m.weight) }
