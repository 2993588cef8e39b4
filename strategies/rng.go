package strategies

import (
	"math/bits"
	"math/rand/v2"
)

// rng is a PCG source held by value, so a pick pays for no interface call.
type rng struct{ src rand.PCG }

func newRNG(seed uint64) rng {
	var r rng
	// The second word only decorrelates strategies built with the same seed
	// from round-robin's start offset, which uses another constant.
	r.src.Seed(seed, 0xda3e39cb94b95bdb)
	return r
}

func (r *rng) uint64() uint64 { return r.src.Uint64() }

// intn returns a uniform value in [0, n), n > 0, without bias: Lemire's
// multiply-shift with rejection of the short final interval.
func (r *rng) intn(n uint64) uint64 {
	hi, lo := bits.Mul64(r.src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(r.src.Uint64(), n)
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
