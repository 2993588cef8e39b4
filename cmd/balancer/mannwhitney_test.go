package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMannWhitney(t *testing.T) {
	tests := []struct {
		name  string
		x, y  []float64
		wantU float64
		wantP float64
	}{
		// Exact: complete separation of 5 and 5 has probability 2/252.
		{"separated", []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 0, 2.0 / 252},
		{"separated reversed", []float64{6, 7, 8, 9, 10}, []float64{1, 2, 3, 4, 5}, 25, 2.0 / 252},
		// Interleaved: U at the centre, p = 1.
		{"interleaved", []float64{1, 4, 5, 8}, []float64{2, 3, 6, 7}, 8, 1},
		// A write-up of Pike's balancer reported these timings: 38 35 39 27 33 s vs 36 40 37 43 43 s (ties: normal approximation).
		{"two sets of five runs", []float64{38, 35, 39, 27, 33}, []float64{36, 40, 37, 43, 43}, 4, 0.0937},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, p := mannWhitney(tt.x, tt.y)
			assert.InDelta(t, tt.wantU, u, 1e-9)
			assert.InDelta(t, tt.wantP, p, 5e-4)
		})
	}
}

func TestUFreqSumsToBinomial(t *testing.T) {
	f := uFreq(5, 5)
	var total float64
	for _, c := range f {
		total += c
	}
	assert.InDelta(t, 252, total, 0) // C(10, 5)
	assert.Len(t, f, 26)
	assert.InDelta(t, f[0], f[25], 0, "symmetric")
}

func TestMedian(t *testing.T) {
	assert.InDelta(t, 2, median([]float64{3, 1, 2}), 0)
	assert.InDelta(t, 2.5, median([]float64{4, 1, 3, 2}), 0)
}
