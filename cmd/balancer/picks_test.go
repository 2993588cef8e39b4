package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gobalancer/balancer/internal/lag"
	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// -picks prints exactly what the strategy package picks.
func TestPicksMatchStrategy(t *testing.T) {
	weights := []int{100, 100, 66}
	for _, name := range strategies.Names() {
		for _, keys := range []int{0, 7} {
			t.Run(fmt.Sprintf("%s/keys=%d", name, keys), func(t *testing.T) {
				code, out, errs := runArgs(t, "-picks", "300", "-strategy", name, "-weights", "100,100,66",
					"-keys", fmt.Sprint(keys), "-seed", "3", "-json")
				require.Equal(t, exitOK, code, errs)
				var tr Trace
				require.NoError(t, json.Unmarshal([]byte(out), &tr))

				s, err := strategies.New(name, weights, strategies.WithSeed(3))
				require.NoError(t, err)
				want := make([]int, 300)
				counts := make([]int, 3)
				for i := range want {
					key := uint64(i)
					if keys > 0 {
						key %= uint64(keys)
					}
					want[i] = s.Pick(key)
					counts[want[i]]++
				}
				assert.Equal(t, name, tr.Strategy)
				assert.Equal(t, weights, tr.Weights)
				assert.Equal(t, want, tr.Picks)
				assert.Equal(t, counts, tr.Counts)
				assert.InDelta(t, lag.Max(weights, want), tr.MaxLag, 1e-12)
			})
		}
	}
}

func TestPicksText(t *testing.T) {
	code, out, errs := runArgs(t, "-picks", "20", "-strategy", "swrr", "-weights", "100,100,66")
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "pick 0: worker 0 (weight 100)\n")
	assert.Contains(t, out, "pick 2: worker 2 (weight 66)\n")
	assert.Equal(t, 20, strings.Count(out, "pick "))
	assert.Contains(t, out, "max_lag")
}

// The trace JSON's field names are a stable interface.
func TestTraceSchema(t *testing.T) {
	code, out, _ := runArgs(t, "-picks", "5", "-json")
	require.Equal(t, exitOK, code)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	assert.Len(t, m, 6)
	for _, k := range []string{"strategy", "weights", "picks", "counts", "max_lag", "interrupted"} {
		assert.Contains(t, m, k)
	}
}
