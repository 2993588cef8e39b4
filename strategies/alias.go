package strategies

import "math/bits"

// aliasTable samples members in proportion to their weights in O(1): Vose's
// alias method ("A linear algorithm for generating random numbers with a
// given distribution", 1991), built in exact integer arithmetic. Column c is
// chosen uniformly; it yields its own member with probability thr/2^64 and
// its alias otherwise.
type aliasTable struct {
	col           []aliasCol
	small, large  []int32
	scaled        []uint64
	membersOfCols []int32
}

type aliasCol struct {
	thr   uint64
	self  int32
	alias int32
}

// build fills the table for the eligible members of m, reusing storage.
func (t *aliasTable) build(m *members) {
	t.membersOfCols = t.membersOfCols[:0]
	for i := range m.weight {
		if m.eligible(i) {
			t.membersOfCols = append(t.membersOfCols, int32(i))
		}
	}
	n := len(t.membersOfCols)
	W := uint64(m.total) // zero-weight members add nothing to total
	t.col = t.col[:0]
	t.scaled = t.scaled[:0]
	t.small, t.large = t.small[:0], t.large[:0]
	for c, i := range t.membersOfCols {
		// Column c holds probability w_i*n/W in units of 1/W: exact, and
		// below 2^20 * 2^31, so no overflow.
		p := uint64(m.weight[i]) * uint64(n)
		t.scaled = append(t.scaled, p)
		t.col = append(t.col, aliasCol{self: i, alias: i})
		if p < W {
			t.small = append(t.small, int32(c))
		} else {
			t.large = append(t.large, int32(c))
		}
	}
	for len(t.small) > 0 && len(t.large) > 0 {
		s := t.small[len(t.small)-1]
		t.small = t.small[:len(t.small)-1]
		l := t.large[len(t.large)-1]
		// p_s < W, so the quotient p_s*2^64/W fits in 64 bits.
		t.col[s].thr, _ = bits.Div64(t.scaled[s], 0, W)
		t.col[s].alias = t.col[l].self
		t.scaled[l] -= W - t.scaled[s]
		if t.scaled[l] < W {
			t.large = t.large[:len(t.large)-1]
			t.small = append(t.small, l)
		}
	}
	// Whatever is left is full (exactly W, or off by nothing since the
	// arithmetic is exact): it always yields itself.
	for _, c := range t.large {
		t.col[c].thr = ^uint64(0)
	}
	for _, c := range t.small {
		t.col[c].thr = ^uint64(0)
	}
}

// sample maps one 64-bit random draw to a member. The high word of u*n
// picks the column and the low word, uniform within each column, is the
// coin: one draw per pick, with a bias below n/2^64.
func (t *aliasTable) sample(u uint64) int {
	c, coin := bits.Mul64(u, uint64(len(t.col)))
	e := &t.col[c]
	if coin < e.thr {
		return int(e.self)
	}
	return int(e.alias)
}
