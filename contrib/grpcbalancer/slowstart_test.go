package grpcbalancer

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSlowStartConfig: the slowStart field is parsed and validated when
// the service config is, never accepted and ignored.
func TestSlowStartConfig(t *testing.T) {
	for _, js := range []string{
		`{"slowStart":{"window":"nope"}}`,
		`{"slowStart":{"window":"0s"}}`,
		`{"slowStart":{"window":"1s","floor":1.5}}`,
		`{"slowStart":{"window":"1s","aggression":-1}}`,
		`{"slowStart":{"window":"1s","flor":0.2}}`,
	} {
		_, err := parseConfig(json.RawMessage(js), "swrr")
		require.ErrorIs(t, err, ErrBadConfig, js)
	}
	c, err := parseConfig(json.RawMessage(`{"slowStart":{"window":"30s","floor":0.2,"aggression":2}}`), "swrr")
	require.NoError(t, err)
	require.Equal(t, &SlowStart{Window: "30s", Floor: 0.2, Aggression: 2}, c.SlowStart)
}

// TestSlowStartRampsNewEndpoint: under slow start the policy takes the
// mutex path, and an endpoint that joins starts near its floor and reaches
// its full share once the window has passed.
func TestSlowStartRampsNewEndpoint(t *testing.T) {
	addrs := servers(t, 3)
	ch := openChannel(t, PolicyName("swrr"), `{"slowStart":{"window":"500ms"}}`, addrs[:2], []int{1, 1})
	require.IsType(t, &picker{}, ch.picker(), "slow start takes the mutex path")
	before := pickAll(ch.picker(), 100)
	require.Len(t, before, 2)

	ch.r.UpdateState(addrState(addrs, []int{1, 1, 1}))
	p := ch.waitFor(t, 3)
	share := func() float64 {
		const n = 3000
		for sc, k := range pickAll(p, n) {
			if _, ok := before[sc]; !ok {
				return float64(k) / n
			}
		}
		return 0
	}
	early := share()
	time.Sleep(600 * time.Millisecond)
	late := share()
	require.Less(t, early, 0.2, "a new endpoint starts near its floor (full share 1/3)")
	require.InDelta(t, 1.0/3, late, 0.02, "after the window, its full share")
}
