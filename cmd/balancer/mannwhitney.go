package main

import (
	"math"
	"slices"
)

// mannWhitney compares two samples without assuming a distribution (the
// right test for a handful of timings, which are skewed and noisy). It
// returns U for x (the number of pairs where x beats y, ties counting one
// half) and the two-sided p-value: exact by counting arrangements when the
// samples are small and free of ties, else the normal approximation with
// tie and continuity corrections.
func mannWhitney(x, y []float64) (u, p float64) {
	n1, n2 := len(x), len(y)
	if n1 == 0 || n2 == 0 {
		return 0, 1
	}
	type obs struct {
		v     float64
		fromX bool
	}
	all := make([]obs, 0, n1+n2)
	for _, v := range x {
		all = append(all, obs{v, true})
	}
	for _, v := range y {
		all = append(all, obs{v, false})
	}
	slices.SortFunc(all, func(a, b obs) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	// Mid-ranks for ties; tieSum is Σ(t³ − t) over tie groups.
	var r1, tieSum float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // ranks i+1..j averaged
		for k := i; k < j; k++ {
			if all[k].fromX {
				r1 += rank
			}
		}
		t := float64(j - i)
		tieSum += t*t*t - t
		i = j
	}
	u = r1 - float64(n1*(n1+1))/2
	if tieSum == 0 && n1*n2 <= 400 {
		return u, exactP(n1, n2, int(math.Round(u)))
	}
	N := float64(n1 + n2)
	mean := float64(n1*n2) / 2
	sd := math.Sqrt(float64(n1*n2) / 12 * ((N + 1) - tieSum/(N*(N-1))))
	if sd == 0 {
		return u, 1
	}
	z := (math.Abs(u-mean) - 0.5) / sd
	return u, math.Min(1, math.Erfc(math.Max(z, 0)/math.Sqrt2))
}

// exactP is the two-sided p-value of U = u for samples of n1 and n2 without
// ties: twice the smaller tail of U's exact distribution.
func exactP(n1, n2, u int) float64 {
	f := uFreq(n1, n2)
	var total, lo, hi float64
	for k, c := range f {
		total += c
		if k <= u {
			lo += c
		}
		if k >= u {
			hi += c
		}
	}
	return math.Min(1, 2*math.Min(lo, hi)/total)
}

// uFreq counts, for each k, the arrangements of n1 x's and n2 y's with
// U = k, by the recurrence on the largest observation: it is an x (which
// beats all n2 y's) or a y.
func uFreq(n1, n2 int) []float64 {
	// f[i][j] is the distribution for samples of i and j.
	f := make([][][]float64, n1+1)
	for i := range f {
		f[i] = make([][]float64, n2+1)
		for j := range f[i] {
			d := make([]float64, i*j+1)
			if i == 0 || j == 0 {
				d[0] = 1
			} else {
				for k := range d {
					if k >= j {
						d[k] += f[i-1][j][k-j]
					}
					if k < len(f[i][j-1]) {
						d[k] += f[i][j-1][k]
					}
				}
			}
			f[i][j] = d
		}
	}
	return f[n1][n2]
}

// median of a sample (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
