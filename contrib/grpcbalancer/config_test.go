package grpcbalancer

import (
	"encoding/json"
	"testing"

	"github.com/gobalancer/balancer/strategies"
	"github.com/stretchr/testify/require"
)

func TestParseConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		policy   string // strategy bound to the policy, "" for the generic one
		js       string
		want     string // resulting strategy; "" when an error is expected
		wantSeed uint64
	}{
		"generic default":                    {"", `{}`, strategies.Default, 0},
		"generic empty":                      {"", ``, strategies.Default, 0},
		"generic named":                      {"", `{"strategy":"round-robin"}`, "round-robin", 0},
		"bound":                              {"round-robin", `{}`, "round-robin", 0},
		"bound same name":                    {"round-robin", `{"strategy":"round-robin","seed":7}`, "round-robin", 7},
		"bound other name":                   {"round-robin", `{"strategy":"least-pending"}`, "", 0},
		"unknown strategy":                   {"", `{"strategy":"nope"}`, "", 0},
		"unknown field (typo)":               {"", `{"stratgy":"round-robin"}`, "", 0},
		"not an object":                      {"", `[1]`, "", 0},
		"key header and option":              {"round-robin", `{"keyHeader":"user-id","randomStart":true}`, "round-robin", 0},
		"option the strategy has no use for": {"least-pending", `{"randomStart":true}`, "", 0},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := parseConfig(json.RawMessage(tc.js), tc.policy)
			if tc.want == "" {
				require.ErrorIs(t, err, ErrBadConfig)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, c.Strategy)
			if tc.wantSeed != 0 {
				require.Equal(t, tc.wantSeed, *c.Seed)
			}
		})
	}
}

func TestPolicyName(t *testing.T) {
	require.Equal(t, "gobalancer_least_pending", PolicyName("least-pending"))
	require.Equal(t, "gobalancer_swrr", PolicyName("swrr"))
	require.Contains(t, Policies(), "gobalancer_round_robin")
	require.Equal(t, Name, Policies()[len(Policies())-1])
}
