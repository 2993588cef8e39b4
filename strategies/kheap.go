package strategies

import (
	"math/bits"
	"unsafe"
)

// kheap is an indexed 4-ary min-heap of members keyed by one uint64, for
// strategies that can pack their whole order into one word (least-pending:
// pending count above the tick of the last pick; swrr's eligible members:
// window end, length and index; least-requests' idle members: midpoint and
// index). There is no tie-break: a strategy that needs a total order makes
// its keys distinct, and a comparison is one instruction. An entry is 16
// bytes, so the four children of a slot fill one 64-byte line when the
// slice comes from makeKents.
type kheap struct {
	e   []kent
	pos []int32 // member -> slot, -1 when absent
	// cmov picks the smallest of four children without branches
	// (downCmov). It pays when keys come in no predictable order (at
	// 10 000 members, least-requests' idle heap mispredicts 7.2 branches a
	// pick with branches and 1.0 without, in callgrind's model); when most
	// keys share their high bits and a sift goes the same way every time
	// (least-pending), branches predict and are faster (39 ns against 46).
	cmov  bool
	touch uint64 // keeps downCmov's early loads from being dropped
}

type kent struct {
	key uint64
	idx int32
}

// makeKents returns an empty slice of capacity n placed so that slot 1
// starts a 64-byte line: then the four children of every slot (4j+1 to
// 4j+4) are one line, where a plain allocation (page- or 16-byte-aligned)
// splits each group across two. The slice must not be grown by append
// beyond n, or the placement is lost (only speed, never order).
func makeKents(n int) []kent {
	b := make([]kent, n+3)
	off := (64 - (uintptr(unsafe.Pointer(&b[0]))+16)%64) % 64 / 16
	return b[off : off : off+uintptr(n)]
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
	h.pos[x.idx] = -1
	last := len(h.e) - 1
	if last > 0 {
		h.e[0] = h.e[last]
		h.e = h.e[:last]
		h.down(0)
	} else {
		h.e = h.e[:0]
	}
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
	if h.cmov {
		h.downCmov(j)
		return
	}
	e, pos := h.e, h.pos
	n := len(e)
	x := e[j]
	top := j
	for {
		c := arity*j + 1
		m := c
		if c+arity <= n {
			g := (*[arity]kent)(e[c : c+arity])
			k0, k1, k2, k3 := g[0].key, g[1].key, g[2].key, g[3].key
			a, b := 0, 2
			if k1 < k0 {
				a = 1
			}
			if k3 < k2 {
				b = 3
			}
			if g[b].key < g[a].key {
				a = b
			}
			y := g[a&(arity-1)]
			e[j] = y
			pos[y.idx] = int32(j)
			j = c + a
			continue
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

// downCmov is down for heaps with cmov set.
func (h *kheap) downCmov(j int) {
	e, pos := h.e, h.pos
	n := len(e)
	x := e[j]
	top := j
	var touch uint64
	for {
		c := arity*j + 1
		m := c
		if c+arity <= n {
			g := (*[arity]kent)(e[c : c+arity])
			k0, k1, k2, k3 := g[0].key, g[1].key, g[2].key, g[3].key
			if gc := arity*c + 1; gc+arity*arity <= n {
				// Touch the four grandchild groups (four lines) now: the
				// loads do not wait for this level's choice, so the next
				// level's line is on its way while it is made.
				gg := (*[arity * arity]kent)(e[gc : gc+arity*arity])
				touch += gg[0].key + gg[arity].key + gg[2*arity].key + gg[3*arity].key
			}
			// A tournament with borrows and masks, no branches: ties go
			// to the lower slot, as in down.
			_, p := bits.Sub64(k1, k0, 0) // 1 if k1 < k0
			_, q := bits.Sub64(k3, k2, 0)
			_, r := bits.Sub64(min(k2, k3), min(k0, k1), 0)
			a := int(p ^ (p^(2|q))&-r)
			y := g[a&(arity-1)]
			e[j] = y
			pos[y.idx] = int32(j)
			j = c + a
			continue
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
	h.touch = touch
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
