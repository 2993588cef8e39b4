package strategies

import "fmt"

// dheap is an indexed 4-ary min-heap of members keyed by (k1, k2, member).
// The member index is the last tie-break, so equal keys pop in index order
// and every strategy built on it stays deterministic. pos maps a member to
// its slot (-1 when absent), kept on every move as in container/heap's
// priority-queue example.
//
// Four children per node halve the depth of a binary heap, and the keys sit
// inline in the slice, so a sift touches one cache line per level; at 10 000
// members that is what keeps swrr and least-requests under 100 ns.
type dheap struct {
	e   []hent
	pos []int32
}

type hent struct {
	k1, k2 uint64
	idx    int32
}

const arity = 4

func (a *hent) less(b *hent) bool {
	if a.k1 != b.k1 {
		return a.k1 < b.k1
	}
	if a.k2 != b.k2 {
		return a.k2 < b.k2
	}
	return a.idx < b.idx
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

func (h *dheap) down(j int) {
	n := len(h.e)
	x := h.e[j]
	for {
		c := arity*j + 1
		if c >= n {
			break
		}
		m := c
		end := min(c+arity, n)
		for k := c + 1; k < end; k++ {
			if h.e[k].less(&h.e[m]) {
				m = k
			}
		}
		if !h.e[m].less(&x) {
			break
		}
		h.e[j] = h.e[m]
		h.pos[h.e[j].idx] = int32(j)
		j = m
	}
	h.e[j] = x
	h.pos[x.idx] = int32(j)
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
