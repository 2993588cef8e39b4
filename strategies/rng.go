package strategies

import "math/bits"

// rng is wyrand (Wang Yi's 64-bit generator: a Weyl sequence through a
// 64×64→128 multiply, folded): period 2^64, passes BigCrush and PractRand,
// and about five instructions, so it inlines into a pick. PCG, which it
// replaced, cost a call and 20 more instructions per draw.
type rng struct{ s uint64 }

func newRNG(seed uint64) rng {
	// The constant only decorrelates strategies built with the same seed
	// from round-robin's start offset, which uses another generator.
	return rng{s: mix64(seed ^ 0xda3e39cb94b95bdb)}
}

func (r *rng) uint64() uint64 {
	r.s += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(r.s, r.s^0xe7037ed1a0b428db)
	return hi ^ lo
}

// intn returns a uniform value in [0, n), n > 0, without bias: Lemire's
// multiply-shift with rejection of the short final interval.
func (r *rng) intn(n uint64) uint64 {
	hi, lo := bits.Mul64(r.uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(r.uint64(), n)
		}
	}
	return hi
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
