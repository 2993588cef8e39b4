package strategies

import (
	"fmt"
	"math/bits"
)

// dheap is an indexed 4-ary min-heap of members keyed by (k1, k2, member).
// The member index is the last tie-break, so equal keys pop in index order
// and every strategy built on it stays deterministic. pos maps a member to
// its slot (-1 when absent), kept on every move as in container/heap's
// priority-queue example.
//
// Four children per node halve the depth of a binary heap, and the keys sit
// inline in the slice, so a sift touches one or two cache lines per level.
// Strategies whose order fits one word use kheap instead, which is about
// twice as cheap per level; here it serves latency, least-requests' busy
// members and swrr when W is too large to pack. The smallest of four
// children is chosen without branches (a mispredicted branch per level cost
// more than the extra instructions: least-requests went from 8.2 to 2.0
// mispredicts a pick in callgrind's model).
type dheap struct {
	e   []hent
	pos []int32
}

type hent struct {
	k1, k2 uint64
	idx    int32
}

const arity = 4

// less compares (k1, k2, idx) as one 192-bit number: a subtract-with-borrow
// chain, so no branch to mispredict when keys tie on k1 (and in these heaps
// they mostly do: equal weights, equal pending counts).
func (a *hent) less(b *hent) bool { return a.lessBit(b) != 0 }

// lessBit is less as 1 or 0, for selecting without a branch.
func (a *hent) lessBit(b *hent) uint64 {
	_, c := bits.Sub64(uint64(uint32(a.idx)), uint64(uint32(b.idx)), 0)
	_, c = bits.Sub64(a.k2, b.k2, c)
	_, c = bits.Sub64(a.k1, b.k1, c)
	return c
}

func (h *dheap) len() int { return len(h.e) }

// has reports whether member i is in the heap.
func (h *dheap) has(i int) bool { return i < len(h.pos) && h.pos[i] >= 0 }

// top returns the minimum; the heap must not be empty.
func (h *dheap) top() *hent { return &h.e[0] }

func (h *dheap) grow(i int) {
	for len(h.pos) <= i {
		h.pos = append(h.pos, -1)
	}
}

// push adds member i, which must not be in the heap.
func (h *dheap) push(i int, k1, k2 uint64) {
	h.grow(i)
	h.e = append(h.e, hent{k1: k1, k2: k2, idx: int32(i)})
	h.up(len(h.e) - 1)
}

// set changes member i's keys and restores the order.
func (h *dheap) set(i int, k1, k2 uint64) {
	j := int(h.pos[i])
	old := h.e[j]
	h.e[j].k1, h.e[j].k2 = k1, k2
	if h.e[j].less(&old) {
		h.up(j)
	} else {
		h.down(j)
	}
}

// remove takes member i out of the heap, if it is there.
func (h *dheap) remove(i int) {
	if !h.has(i) {
		return
	}
	j := int(h.pos[i])
	h.pos[i] = -1
	last := len(h.e) - 1
	if j != last {
		moved := h.e[last]
		h.e[j] = moved
		h.e = h.e[:last]
		h.pos[moved.idx] = int32(j)
		if j > 0 && moved.less(&h.e[(j-1)/arity]) {
			h.up(j)
		} else {
			h.down(j)
		}
		return
	}
	h.e = h.e[:last]
}

// pop removes and returns the minimum.
func (h *dheap) pop() hent {
	x := h.e[0]
	h.remove(int(x.idx))
	return x
}

// replaceTop removes the minimum and adds member i (not in the heap) in one
// sift, where a pop and a push would take two; it returns the old minimum.
func (h *dheap) replaceTop(i int, k1, k2 uint64) hent {
	x := h.e[0]
	h.pos[x.idx] = -1
	h.grow(i)
	h.e[0] = hent{k1: k1, k2: k2, idx: int32(i)}
	h.down(0)
	return x
}

// reset empties the heap without freeing its storage.
func (h *dheap) reset() {
	for _, x := range h.e {
		h.pos[x.idx] = -1
	}
	h.e = h.e[:0]
}

// init restores the heap order over h.e in O(n), after a bulk load.
func (h *dheap) init() {
	for j, x := range h.e {
		h.grow(int(x.idx))
		h.pos[x.idx] = int32(j)
	}
	if len(h.e) < 2 {
		return
	}
	for j := (len(h.e) - 2) / arity; j >= 0; j-- {
		h.down(j)
	}
}

// up moves the entry at j towards the root, shifting parents down into the
// hole instead of swapping, so each level costs one write.
func (h *dheap) up(j int) {
	x := h.e[j]
	for j > 0 {
		p := (j - 1) / arity
		if !x.less(&h.e[p]) {
			break
		}
		h.e[j] = h.e[p]
		h.pos[h.e[j].idx] = int32(j)
		j = p
	}
	h.e[j] = x
	h.pos[x.idx] = int32(j)
}

// down moves the entry at j towards the leaves. It is Floyd's bottom-up
// sift: the hole descends along the smaller children to a leaf without
// comparing against the entry (which in these heaps usually belongs near
// the bottom: a member just picked), then the entry climbs back from there.
// The result is the same slot a top-down sift finds, with one comparison
// per level fewer; full groups of four children are compared without
// bounds checks.
func (h *dheap) down(j int) {
	e, pos := h.e, h.pos
	n := len(e)
	x := e[j]
	top := j
	for {
		c := arity*j + 1
		m := c
		if c+arity <= n {
			// The smallest of four without a branch: the order of the
			// children is data, and a branch on it mispredicts often.
			g := e[c : c+arity : c+arity]
			a := g[1].lessBit(&g[0])
			b := 2 | g[3].lessBit(&g[2])
			a ^= (a ^ b) & -g[b&3].lessBit(&g[a&3])
			m = c + int(a)
		} else if c < n {
			for k := c + 1; k < n; k++ {
				if e[k].less(&e[m]) {
					m = k
				}
			}
		} else {
			break
		}
		e[j] = e[m]
		pos[e[j].idx] = int32(j)
		j = m
	}
	for j > top {
		p := (j - 1) / arity
		if !x.less(&e[p]) {
			break
		}
		e[j] = e[p]
		pos[e[j].idx] = int32(j)
		j = p
	}
	e[j] = x
	pos[x.idx] = int32(j)
}

// check verifies the heap order and the position map; tests call it.
func (h *dheap) check() error {
	for j := range h.e {
		if p := (j - 1) / arity; j > 0 && h.e[j].less(&h.e[p]) {
			return errHeap("order broken at slot", j)
		}
		if int(h.pos[h.e[j].idx]) != j {
			return errHeap("position map wrong at slot", j)
		}
	}
	in := 0
	for _, p := range h.pos {
		if p >= 0 {
			in++
		}
	}
	if in != len(h.e) {
		return errHeap("position map counts members", in)
	}
	return nil
}

func errHeap(msg string, n int) error {
	return fmt.Errorf("strategies: heap invariant: %s %d", msg, n)
}
