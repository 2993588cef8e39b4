package strategies

import (
	"fmt"
	"math/bits"
	"unsafe"
)

// heap is the package's one indexed 4-ary min-heap of members, generic over
// its key: one word (uint64) for strategies that pack their whole order
// into one (least-pending: pending count above the tick of the last pick;
// swrr, and so least-requests' idle members: window end, length and
// index), or two words (pair) compared as one 128-bit number, then by
// member index, for those that cannot (latency, least-requests' busy
// members, swrr when W is too large to pack). One-word keys have no tie-break: a strategy that
// needs a total order makes its keys distinct. pos maps a member to its
// slot (-1 when absent), kept on every move as in container/heap's
// priority-queue example.
//
// Four children per node halve the depth of a binary heap, and the keys sit
// inline in the slice, so a sift touches one or two cache lines per level.
// The key is a type parameter rather than always two words because the
// comparison is the whole cost of a sift: a two-word key made least-pending's
// and swrr's picks markedly slower (BenchmarkPick).
type heap[K heapKey, S sift] struct {
	e   []hent[K]
	pos []int32
}

// sift says how down picks the smallest of four children, compiled into
// each heap type rather than tested on every level (a flag tested per
// level cost a pick a fifth of its time). borrows picks without branches,
// which pays when keys come in no predictable order (swrr: far fewer
// mispredicted branches a pick); branches pays when most keys share their
// high bits and a sift goes the same way every time (least-pending).
// BenchmarkPick measures both.
type sift interface{ branches | borrows }

type (
	branches struct{}
	borrows  struct{ _ byte } // of another size than branches, so down can tell them apart as a constant
)

// heapKey is a heap's key: one word, or a pair.
type heapKey interface{ uint64 | pair }

// pair is a two-word key, ordered by hi, then lo.
type pair struct{ hi, lo uint64 }

type hent[K heapKey] struct {
	key K
	idx int32
}

// lessBit is 1 if a orders before b, else 0, computed without a branch (a
// subtract-with-borrow chain; ties on hi are the rule in these heaps: equal
// weights, equal pending counts). Each instantiation is compiled for its
// own key shape, so the size test is a constant and the comparison inlines.
func lessBit[K heapKey](a, b *hent[K]) uint64 {
	if unsafe.Sizeof(a.key) == unsafe.Sizeof(uint64(0)) {
		_, c := bits.Sub64(*(*uint64)(unsafe.Pointer(&a.key)), *(*uint64)(unsafe.Pointer(&b.key)), 0)
		return c
	}
	return pairBit((*pair)(unsafe.Pointer(&a.key)), (*pair)(unsafe.Pointer(&b.key)), a.idx, b.idx)
}

// pairBit is lessBit on two pairs and their members' indices.
func pairBit(x, y *pair, i, j int32) uint64 {
	_, c := bits.Sub64(uint64(uint32(i)), uint64(uint32(j)), 0)
	_, c = bits.Sub64(x.lo, y.lo, c)
	_, c = bits.Sub64(x.hi, y.hi, c)
	return c
}

// less is lessBit as a bool: on one word a plain compare, which the
// compiler fuses with its jump; on pairs still the borrow chain, since
// their keys tie on hi too often for a branch to predict (least-requests:
// 1.0 mispredicted branches a pick at 1000 members, 2.0 with branches).
// It must stay within the inliner's budget.
func less[K heapKey](a, b *hent[K]) bool {
	if unsafe.Sizeof(a.key) == unsafe.Sizeof(uint64(0)) {
		return *(*uint64)(unsafe.Pointer(&a.key)) < *(*uint64)(unsafe.Pointer(&b.key))
	}
	return pairBit((*pair)(unsafe.Pointer(&a.key)), (*pair)(unsafe.Pointer(&b.key)), a.idx, b.idx) != 0
}

const arity = 4

func (h *heap[K, S]) len() int { return len(h.e) }

// has reports whether member i is in the heap.
func (h *heap[K, S]) has(i int) bool { return i < len(h.pos) && h.pos[i] >= 0 }

// top returns the minimum; the heap must not be empty.
func (h *heap[K, S]) top() *hent[K] { return &h.e[0] }

func (h *heap[K, S]) grow(i int) {
	for len(h.pos) <= i {
		h.pos = append(h.pos, -1)
	}
}

// push adds member i, which must not be in the heap.
func (h *heap[K, S]) push(i int, key K) {
	h.grow(i)
	h.e = append(h.e, hent[K]{key: key, idx: int32(i)})
	h.up(len(h.e) - 1)
}

// set changes member i's key and restores the order.
func (h *heap[K, S]) set(i int, key K) {
	j := int(h.pos[i])
	old := h.e[j]
	h.e[j].key = key
	if less(&h.e[j], &old) {
		h.up(j)
	} else {
		h.down(j)
	}
}

// remove takes member i out of the heap, if it is there.
func (h *heap[K, S]) remove(i int) {
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
	if j > 0 && less(&moved, &h.e[(j-1)/arity]) {
		h.up(j)
	} else {
		h.down(j)
	}
}

// pop removes and returns the minimum.
func (h *heap[K, S]) pop() hent[K] {
	x := h.e[0]
	h.remove(int(x.idx))
	return x
}

// replaceTop removes the minimum and adds member i (not in the heap) in one
// sift, where a pop and a push would take two; it returns the old minimum.
func (h *heap[K, S]) replaceTop(i int, key K) hent[K] {
	x := h.e[0]
	h.pos[x.idx] = -1
	h.grow(i)
	h.e[0] = hent[K]{key: key, idx: int32(i)}
	h.down(0)
	return x
}

// reset empties the heap without freeing its storage.
func (h *heap[K, S]) reset() {
	for _, x := range h.e {
		h.pos[x.idx] = -1
	}
	h.e = h.e[:0]
}

// init restores the heap order over h.e in O(n), after a bulk load.
func (h *heap[K, S]) init() {
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

// up moves the entry at j towards the root.
func (h *heap[K, S]) up(j int) { h.climb(j, 0, h.e[j]) }

// climb puts x in the hole at j, or above it but not above slot top,
// shifting parents down into the hole instead of swapping, so each level
// costs one write.
func (h *heap[K, S]) climb(j, top int, x hent[K]) {
	e, pos := h.e, h.pos
	for j > top {
		p := (j - 1) / arity
		if !less(&x, &e[p]) {
			break
		}
		e[j] = e[p]
		pos[e[j].idx] = int32(j)
		j = p
	}
	e[j] = x
	pos[x.idx] = int32(j)
}

// down moves the entry at j towards the leaves. It is Floyd's bottom-up
// sift: the hole descends along the smaller children to a leaf without
// comparing against the entry (which in these heaps usually belongs near
// the bottom: a member just picked), then the entry climbs back from there.
// The result is the same slot a top-down sift finds, with one comparison
// per level fewer.
func (h *heap[K, S]) down(j int) {
	e, pos := h.e, h.pos
	var sel S
	n := len(e)
	x := e[j]
	top := j
	for {
		c := arity*j + 1
		m := c
		if c+arity <= n {
			// The smallest of four (ties: the lower slot), by a
			// tournament with branches or, with cmov, with borrows and
			// masks.
			g := (*[arity]hent[K])(e[c : c+arity])
			var a int
			switch {
			case unsafe.Sizeof(sel) != 0 && unsafe.Sizeof(x.key) == unsafe.Sizeof(uint64(0)):
				// On one word the final round compares the two
				// winners' keys by min, so it does not wait for the
				// first rounds' choices to load its operands.
				// Each key through its own field: an entry is 16 bytes
				// on 64-bit machines but 12 where uint64 is 4-byte
				// aligned (386, arm).
				k0 := *(*uint64)(unsafe.Pointer(&g[0].key))
				k1 := *(*uint64)(unsafe.Pointer(&g[1].key))
				k2 := *(*uint64)(unsafe.Pointer(&g[2].key))
				k3 := *(*uint64)(unsafe.Pointer(&g[3].key))
				_, p := bits.Sub64(k1, k0, 0)
				_, q := bits.Sub64(k3, k2, 0)
				_, r := bits.Sub64(min(k2, k3), min(k0, k1), 0)
				a = int((p ^ (p^(2|q))&-r) & (arity - 1))
			case unsafe.Sizeof(sel) != 0:
				p := lessBit(&g[1], &g[0])
				q := 2 | lessBit(&g[3], &g[2])
				p ^= (p ^ q) & -lessBit(&g[q&3], &g[p&3])
				a = int(p & (arity - 1))
			default:
				b := 2
				if less(&g[1], &g[0]) {
					a = 1
				}
				if less(&g[3], &g[2]) {
					b = 3
				}
				if less(&g[b], &g[a]) {
					a = b
				}
			}
			m = c + a
		} else if c < n {
			for k := c + 1; k < n; k++ {
				if less(&e[k], &e[m]) {
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
	h.climb(j, top, x)
}

// check verifies the heap order and the position map; tests call it.
func (h *heap[K, S]) check() error {
	for j := range h.e {
		if p := (j - 1) / arity; j > 0 && less(&h.e[j], &h.e[p]) {
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
