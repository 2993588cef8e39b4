package strategies

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// hashRing is the consistent-hashing ring the affinity strategies share
// (Karger et al. 1997, with virtual nodes as in ketama). Each point packs
// the top 40 bits of an xxhash of (member, replica) above the 24-bit member
// index, so the ring is one sorted []uint64, 8 bytes a point: about 13 MB
// for 10 000 members at 160 points, where kitex's uses 154 MB.
//
// A lookup goes through a bucket index over the top bits of the hash (about
// two points per bucket), so it reads one bucket entry and one or two cache
// lines of points instead of binary-searching 1.6 M points.
//
// The scale from weight to points is chosen when the ring is built:
// vnodes points for a member of average weight. Between builds a member's
// points depend only on its index and its weight, so adding, removing or
// re-weighting one member moves only the keys of the points it gains or
// loses. Add and SetWeight to a positive weight rebuild the ring at a
// fresh scale when the average weight has moved so far that a member of
// average weight would have more than 2·vnodes points or fewer than
// vnodes/2: otherwise members added to a ring built with light weights
// would take hundreds of times the points a ring built at once gives them
// (a ring of one member of weight 1 given 50 members of weight 1000 by Add
// held 3.3 M points where building gives 8 000). A rebuild moves keys
// between the members that stay, as building the ring anew would. Remove
// and SetWeight(i, 0) never rebuild, so they move only the keys of the
// member that leaves; the points of a member of average weight may then
// stay outside [vnodes/2, 2·vnodes] until the next Add or SetWeight.
type hashRing struct {
	pts    []uint64
	spare  []uint64 // the previous pts, reused by the next sort
	bucket []uint32
	shift  uint
	scale  float64
	vnodes int
	count  []int // points per member
}

const (
	ringOwnerBits   = 24
	ringOwnerMask   = 1<<ringOwnerBits - 1
	ringMaxMembers  = 1 << ringOwnerBits
	ringMaxPerMemb  = 1 << 16
	ringMaxTotalPts = 1 << 22
)

// newHashRing builds the ring for the eligible members of m with vnodes
// points per member of average weight.
func newHashRing(m *members, vnodes int) (hashRing, error) {
	if vnodes < 1 {
		return hashRing{}, fmt.Errorf("%w: %d virtual nodes", ErrBadOption, vnodes)
	}
	if len(m.weight) > ringMaxMembers {
		return hashRing{}, fmt.Errorf("%w: %d members (max %d)", ErrTooLarge, len(m.weight), ringMaxMembers)
	}
	r := hashRing{vnodes: vnodes}
	r.build(m)
	return r, nil
}

// idealScale is the points per unit of weight that give vnodes points to a
// member of average weight, with the whole ring capped so memory stays
// bounded.
func (r *hashRing) idealScale(m *members) float64 {
	W := float64(m.total)
	return min(float64(r.vnodes)*float64(m.live)/W, ringMaxTotalPts/W)
}

// build gives every eligible member of m its points at the ideal scale.
func (r *hashRing) build(m *members) {
	r.scale = r.idealScale(m)
	r.count = slices.Grow(r.count[:0], len(m.weight))[:len(m.weight)]
	raw := r.spare[:0]
	for i := range m.weight {
		r.count[i] = 0
		if m.eligible(i) {
			r.count[i] = r.points(m.weight[i])
			for k := range r.count[i] {
				raw = append(raw, ringPoint(i, k))
			}
		}
	}
	r.sortFrom(raw)
}

// sortFrom makes pts the points of raw in order, and the bucket index
// with them: a counting sort by bucket, then an insertion sort of each
// bucket (2 to 4 points, the points being hashes). That is O(points) where
// slices.Sort took O(points·log points): BenchmarkMembership's round of
// two rebuilds at 100 members took 2.3 ms with it, 1.1 ms with this.
// raw's array becomes the spare.
func (r *hashRing) sortFrom(raw []uint64) {
	n := len(raw)
	nb := 1
	if n >= 4 {
		nb = 1 << (bits.Len(uint(n)) - 2) // 2 to 4 points a bucket
	}
	r.shift = uint(64 - bits.TrailingZeros(uint(nb)))
	r.bucket = slices.Grow(r.bucket[:0], nb+1)[:nb+1]
	clear(r.bucket)
	for _, p := range raw {
		r.bucket[p>>r.shift+1]++
	}
	for b := 1; b <= nb; b++ {
		r.bucket[b] += r.bucket[b-1]
	}
	pts := slices.Grow(r.pts[:0], n)[:n]
	for _, p := range raw {
		b := p >> r.shift
		pts[r.bucket[b]] = p
		r.bucket[b]++
	}
	// Each bucket's counter now holds its end, the next one's start.
	copy(r.bucket[1:], r.bucket[:nb])
	r.bucket[0] = 0
	for b := range nb {
		for j := int(r.bucket[b]) + 1; j < int(r.bucket[b+1]); j++ {
			for k := j; k > int(r.bucket[b]) && pts[k] < pts[k-1]; k-- {
				pts[k], pts[k-1] = pts[k-1], pts[k]
			}
		}
	}
	r.pts, r.spare = pts, raw
}

// change gives member i, whose weight in m is now w, its points, or
// rebuilds the ring when rebuild is allowed and the scale has drifted more
// than 2× from the ideal one.
func (r *hashRing) change(m *members, i, w int, rebuild bool) error {
	if i >= ringMaxMembers {
		return fmt.Errorf("%w: member %d (max %d)", ErrTooLarge, i, ringMaxMembers-1)
	}
	if ideal := r.idealScale(m); rebuild && (r.scale > 2*ideal || 2*r.scale < ideal) {
		r.build(m)
		return nil
	}
	r.set(i, w)
	return nil
}

func (r *hashRing) points(w int) int {
	if w == 0 {
		return 0
	}
	return int(min(max(math.Round(float64(w)*r.scale), 1), ringMaxPerMemb))
}

func ringPoint(i, k int) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint32(b[:4], uint32(i))
	binary.LittleEndian.PutUint32(b[4:], uint32(k))
	return xxhash.Sum64(b[:])&^ringOwnerMask | uint64(i)
}

// set gives member i the points for weight w, keeping the replicas it had.
func (r *hashRing) set(i, w int) {
	for len(r.count) <= i {
		r.count = append(r.count, 0)
	}
	want, have := r.points(w), r.count[i]
	switch {
	case want < have:
		drop := r.extra(i, want, have)
		slices.Sort(drop)
		r.pts = slices.DeleteFunc(r.pts, func(p uint64) bool {
			_, found := slices.BinarySearch(drop, p)
			return found
		})
	case want > have:
		raw := append(r.spare[:0], r.pts...)
		for k := have; k < want; k++ {
			raw = append(raw, ringPoint(i, k))
		}
		r.count[i] = want
		r.sortFrom(raw)
		return
	}
	r.count[i] = want
	r.reindex()
}

// extra returns member i's points for replicas from..to-1.
func (r *hashRing) extra(i, from, to int) []uint64 {
	out := make([]uint64, 0, to-from)
	for k := from; k < to; k++ {
		out = append(out, ringPoint(i, k))
	}
	return out
}

// reindex rebuilds the bucket index: bucket b starts at the first point
// whose top bits are at least b.
func (r *hashRing) reindex() {
	nb := 1
	if len(r.pts) >= 4 {
		nb = 1 << (bits.Len(uint(len(r.pts))) - 2) // 2 to 4 points a bucket
	}
	r.shift = uint(64 - bits.TrailingZeros(uint(nb)))
	r.bucket = slices.Grow(r.bucket[:0], nb+1)[:nb+1]
	j := 0
	for b := range nb {
		for j < len(r.pts) && r.pts[j]>>r.shift < uint64(b) {
			j++
		}
		r.bucket[b] = uint32(j)
	}
	r.bucket[nb] = uint32(len(r.pts))
}

// lookup returns the position of the first point at or after hash h,
// wrapping past the end.
func (r *hashRing) lookup(h uint64) int {
	target := h &^ ringOwnerMask
	b := h >> r.shift
	j, end := int(r.bucket[b]), int(r.bucket[b+1])
	for j < end && r.pts[j] < target {
		j++
	}
	if j == len(r.pts) {
		j = 0
	}
	return j
}

// owner returns the member owning the point at position j.
func (r *hashRing) owner(j int) int { return int(r.pts[j] & ringOwnerMask) }
