// Package lag measures how smoothly a pick sequence follows its weights.
// The strategies' tests, the dispatcher's schedule tests and the demo's
// picks mode share it; it is no part of the strategies API.
package lag

import "math"

// Max returns the smoothness of a pick sequence over weights w (W = Σw):
// the largest |picks_i(t) − t·w_i/W| over every member i and prefix t of
// picks. A lag below 1 means no member is ever a whole pick ahead of or
// behind its share. Picks outside weights count as slots only. With W = 0
// it is NaN.
//
// The deviation is computed exactly in integers, as c·W − t·w, and divided
// by W once at the end; it is exact while len(picks)·W < 2^62.
func Max(weights []int, picks []int) float64 {
	num, W := MaxNum(weights, picks)
	if W == 0 {
		return math.NaN()
	}
	return float64(num) / float64(W)
}

// MaxNum returns Max as an exact fraction num/W: the largest
// |c_i(t)·W − t·w_i|, and W. It only looks at the instants where the
// deviation can peak: just before and just after a member's pick, and the
// end.
func MaxNum(weights []int, picks []int) (num, W int64) {
	for _, w := range weights {
		W += int64(w)
	}
	count := make([]int64, len(weights))
	upd := func(d int64) {
		if d < 0 {
			d = -d
		}
		num = max(num, d)
	}
	for s, i := range picks {
		if i < 0 || i >= len(weights) {
			continue
		}
		w := int64(weights[i])
		upd(count[i]*W - int64(s)*w)
		count[i]++
		upd(count[i]*W - int64(s+1)*w)
	}
	T := int64(len(picks))
	for i, w := range weights {
		upd(count[i]*W - T*int64(w))
	}
	return num, W
}
