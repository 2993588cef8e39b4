package strategies

import (
	"math/bits"
	"sync/atomic"
)

// rng is wyrand (Wang Yi's 64-bit generator: a Weyl sequence through a
// 64×64→128 multiply, folded): period 2^64, passes BigCrush and PractRand,
// and about five instructions, so it inlines into a pick. PCG, which it
// replaced, cost a call and 20 more instructions per draw.
type rng struct{ s uint64 }

// wyGamma is the Weyl increment: each draw adds it to the state, then
// mixes the sum (wymix).
const wyGamma = 0xa0761d6478bd642f

func newRNG(seed uint64) rng {
	// The constant only decorrelates strategies built with the same seed
	// from round-robin's start offset, which uses another generator.
	return rng{s: mix64(seed ^ 0xda3e39cb94b95bdb)}
}

func (r *rng) uint64() uint64 {
	r.s += wyGamma
	return wymix(r.s)
}

// wymix is wyrand's output function of a state.
func wymix(s uint64) uint64 {
	hi, lo := bits.Mul64(s, s^0xe7037ed1a0b428db)
	return hi ^ lo
}

// intn returns a uniform value in [0, n), n > 0, without bias: Lemire's
// multiply-shift with rejection of the short final interval.
func (r *rng) intn(n uint64) uint64 {
	for {
		if v, ok := lemire(r.uint64(), n); ok {
			return v
		}
	}
}

// lemire maps a draw u to [0, n): the high word of u·n, unless the low
// word falls in the short interval that would bias it (false: draw again).
// The division runs only when the low word is below n, about n/2^64 of the
// time.
func lemire(u, n uint64) (uint64, bool) {
	hi, lo := bits.Mul64(u, n)
	if lo < n && lo < -n%n {
		return 0, false
	}
	return hi, true
}

// mix64 is splitmix64's finalizer: a bijection with full avalanche, so that
// routing keys that differ in a few low bits (sequential ids) land far apart
// on a hash ring.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// cacheLine is the size a word that many goroutines write is padded to, so
// that whatever sits next to it does not share its line.
const cacheLine = 64

// AtomicRand is the strategies' generator (wyrand) for draws shared by
// goroutines, as a Sampler's PickFrom takes them. Its state is one word
// that every draw advances by the same constant before mixing it, so one
// atomic add gives each concurrent draw a state of its own: no lock, no
// retry, and the draws of one goroutine alone are the strategy's sequence.
// It is padded to a cache line of its own, since every draw writes it. Get
// one from Sampler.NewRand; the zero AtomicRand is a valid generator
// seeded with 0.
type AtomicRand struct {
	_ [cacheLine]byte
	s atomic.Uint64
	_ [cacheLine - 8]byte
}

func newAtomicRand(r rng) *AtomicRand {
	a := &AtomicRand{}
	a.s.Store(r.s)
	return a
}

// Uint64 returns the next draw: a uniform 64-bit value.
func (r *AtomicRand) Uint64() uint64 { return wymix(r.s.Add(wyGamma)) }

// intn is rng.intn's draw from r.
func (r *AtomicRand) intn(n uint64) uint64 {
	for {
		if v, ok := lemire(r.Uint64(), n); ok {
			return v
		}
	}
}
