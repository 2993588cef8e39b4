package strategies

// kheap is an indexed 4-ary min-heap of members keyed by one uint64, for
// strategies that can pack their whole order into one word (least-pending:
// pending count above the tick of the last pick; swrr's waiting members by
// window start). There is no tie-break: a strategy that needs a total order
// makes its keys distinct, and a comparison is one instruction. An entry is
// 16 bytes, so the four children of a slot share one 64-byte line.
type kheap struct {
	e   []kent
	pos []int32 // member -> slot, -1 when absent
}

type kent struct {
	key uint64
	idx int32
}

func (h *kheap) len() int { return len(h.e) }

func (h *kheap) has(i int) bool { return i < len(h.pos) && h.pos[i] >= 0 }

func (h *kheap) grow(i int) {
	for len(h.pos) <= i {
		h.pos = append(h.pos, -1)
	}
}

// push adds member i, which must not be in the heap.
func (h *kheap) push(i int, key uint64) {
	h.grow(i)
	h.e = append(h.e, kent{key: key, idx: int32(i)})
	h.up(len(h.e) - 1)
}

// set changes member i's key and restores the order.
func (h *kheap) set(i int, key uint64) {
	j := int(h.pos[i])
	old := h.e[j].key
	h.e[j].key = key
	if key < old {
		h.up(j)
	} else {
		h.down(j)
	}
}

// remove takes member i out of the heap, if it is there.
func (h *kheap) remove(i int) {
	if !h.has(i) {
		return
	}
	j := int(h.pos[i])
	h.pos[i] = -1
	last := len(h.e) - 1
	moved := h.e[last]
	h.e = h.e[:last]
	if j == last {
		return
	}
	h.e[j] = moved
	h.pos[moved.idx] = int32(j)
	if j > 0 && moved.key < h.e[(j-1)/arity].key {
		h.up(j)
	} else {
		h.down(j)
	}
}

// replaceTop removes the minimum and adds member i (not in the heap) in one
// sift; it returns the old minimum.
func (h *kheap) replaceTop(i int, key uint64) kent {
	x := h.e[0]
	h.pos[x.idx] = -1
	h.grow(i)
	h.e[0] = kent{key: key, idx: int32(i)}
	h.down(0)
	return x
}

// pop removes and returns the minimum.
func (h *kheap) pop() kent {
	x := h.e[0]
	h.remove(int(x.idx))
	return x
}

// reset empties the heap without freeing its storage.
func (h *kheap) reset() {
	for _, x := range h.e {
		h.pos[x.idx] = -1
	}
	h.e = h.e[:0]
}

// init restores the heap order over h.e in O(n), after a bulk load.
func (h *kheap) init() {
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

func (h *kheap) up(j int) {
	e, pos := h.e, h.pos
	x := e[j]
	for j > 0 {
		p := (j - 1) / arity
		if x.key >= e[p].key {
			break
		}
		e[j] = e[p]
		pos[e[j].idx] = int32(j)
		j = p
	}
	e[j] = x
	pos[x.idx] = int32(j)
}

// down is Floyd's bottom-up sift, as in dheap.down: the hole follows the
// smaller children to a leaf, then the entry climbs back.
func (h *kheap) down(j int) {
	e, pos := h.e, h.pos
	n := len(e)
	x := e[j]
	top := j
	for {
		c := arity*j + 1
		m := c
		if c+arity <= n {
			g := e[c : c+arity : c+arity]
			a, b := 0, 2
			if g[1].key < g[0].key {
				a = 1
			}
			if g[3].key < g[2].key {
				b = 3
			}
			if g[b].key < g[a].key {
				a = b
			}
			m = c + a
		} else if c < n {
			for k := c + 1; k < n; k++ {
				if e[k].key < e[m].key {
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
		if x.key >= e[p].key {
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
func (h *kheap) check() error {
	for j := range h.e {
		if p := (j - 1) / arity; j > 0 && h.e[j].key < h.e[p].key {
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
