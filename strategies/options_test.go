package strategies

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOptionsNeverIgnored: every constructor takes the options it uses and
// refuses every other with ErrBadOption, naming the option; WithSeed is
// taken by all; WithSlowStart only through New (or newSlowStart).
func TestOptionsNeverIgnored(t *testing.T) {
	used := map[string][]string{
		"round-robin": {"WithRandomStart"}, "iwrr": {"WithRandomStart"},
		"consistent-hash": {"WithVirtualNodes"}, "bounded-hash": {"WithVirtualNodes", "WithLoadFactor"},
		"latency": {"WithDecay"},
	}
	all := map[string]Option{
		"WithRandomStart":  WithRandomStart(true),
		"WithVirtualNodes": WithVirtualNodes(100),
		"WithLoadFactor":   WithLoadFactor(1.5),
		"WithDecay":        WithDecay(0.5),
	}
	for _, name := range Names() {
		c := registry[name]
		_, err := c(Equal(3), WithSeed(7))
		require.NoError(t, err, "%s takes WithSeed", name)
		for opt, o := range all {
			_, err := New(name, Equal(3), o)
			if slices.Contains(used[name], opt) {
				require.NoError(t, err, "%s uses %s", name, opt)
			} else {
				require.ErrorIs(t, err, ErrBadOption, "%s has no use for %s", name, opt)
				require.Contains(t, err.Error(), opt)
			}
		}
		ss := WithSlowStart(PickWindow(100), 0.1, 1)
		_, err = c(Equal(3), ss)
		require.ErrorIs(t, err, ErrBadOption, "%s's constructor called directly cannot wrap itself", name)
		s, err := New(name, Equal(3), ss)
		require.NoError(t, err)
		require.IsType(t, &slowStart{}, s)
	}
}

// TestNewRefusalIsNil: a refused New returns a nil Strategy, not a typed
// nil that compares non-nil, whichever way it fails.
func TestNewRefusalIsNil(t *testing.T) {
	for _, name := range Names() {
		for what, opts := range map[string][]Option{
			"no options":  nil,
			"slow start":  {WithSlowStart(PickWindow(10), 0.5, 1)},
			"bad options": {WithLoadFactor(0.5), WithDecay(2), WithRandomStart(true), WithVirtualNodes(1)},
		} {
			s, err := New(name, nil, opts...)
			require.Error(t, err, "%s, %s", name, what)
			require.True(t, s == nil, "%s, %s: %T", name, what, s)
		}
	}
}
