package grpcbalancer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gobalancer/balancer/strategies"
	"google.golang.org/grpc/serviceconfig"
)

// ErrBadConfig: the policy's JSON config is malformed or names a strategy or
// option the policy cannot use.
var ErrBadConfig = errors.New("grpcbalancer: bad config")

// Config is the JSON config of every gobalancer policy. All fields are
// optional; unknown fields are rejected so a typo is an error rather than a
// silently ignored option.
//
//	{"gobalancer":{"strategy":"consistent-hash","virtualNodes":100,"keyHeader":"user-id"}}
type Config struct {
	serviceconfig.LoadBalancingConfig `json:"-"`

	// Strategy is a strategies registry name. Required by nothing: the
	// generic policy defaults to strategies.Default, and a per-strategy
	// policy accepts only its own name here.
	Strategy string `json:"strategy,omitempty"`
	// Seed makes random strategies repeatable (strategies.WithSeed).
	Seed *uint64 `json:"seed,omitempty"`
	// RandomStart starts round-robin at a random member (strategies.WithRandomStart).
	RandomStart bool `json:"randomStart,omitempty"`
	// VirtualNodes sets ring points per member for the hashing strategies.
	VirtualNodes int `json:"virtualNodes,omitempty"`
	// LoadFactor sets bounded-hash's bound (> 1).
	LoadFactor float64 `json:"loadFactor,omitempty"`
	// Decay sets the latency strategy's EWMA weight, in (0, 1].
	Decay float64 `json:"decay,omitempty"`
	// KeyHeader names an outgoing metadata key whose first value is hashed
	// into the routing key when the call's context carries no WithKey key.
	KeyHeader string `json:"keyHeader,omitempty"`
	// SlowStart ramps an endpoint that joins or comes back from weight 0
	// from floor·w to its weight w over a window of wall-clock time
	// (strategies.WithSlowStart with TimeWindow and time.Now), as Envoy's
	// slow_start_config. A strategy under slow start takes the mutex path:
	// its ramp steps change state on Pick.
	SlowStart *SlowStart `json:"slowStart,omitempty"`
}

// SlowStart is the config of a slow start:
//
//	{"slowStart":{"window":"30s","floor":0.1,"aggression":1}}
type SlowStart struct {
	// Window is a Go duration ("30s", "2m"), required and positive.
	Window string `json:"window"`
	// Floor is the share of its weight a ramp starts from, in (0, 1]
	// (default 0.1).
	Floor float64 `json:"floor,omitempty"`
	// Aggression shapes the ramp: effective = w·(t/window)^(1/aggression),
	// 1 is linear (default 1).
	Aggression float64 `json:"aggression,omitempty"`
}

// options turns the config into strategy options; unset fields keep the
// strategies package's defaults.
func (c *Config) options() []strategies.Option {
	var o []strategies.Option
	if c.Seed != nil {
		o = append(o, strategies.WithSeed(*c.Seed))
	}
	if c.RandomStart {
		o = append(o, strategies.WithRandomStart(true))
	}
	if c.VirtualNodes != 0 {
		o = append(o, strategies.WithVirtualNodes(c.VirtualNodes))
	}
	if c.LoadFactor != 0 {
		o = append(o, strategies.WithLoadFactor(c.LoadFactor))
	}
	if c.Decay != 0 {
		o = append(o, strategies.WithDecay(c.Decay))
	}
	if ss := c.SlowStart; ss != nil {
		// Window was checked by parseConfig; a bad one cannot reach here.
		d, _ := time.ParseDuration(ss.Window)
		floor, aggression := ss.Floor, ss.Aggression
		if floor == 0 {
			floor = 0.1
		}
		if aggression == 0 {
			aggression = 1
		}
		o = append(o, strategies.WithSlowStart(strategies.TimeWindow(d, time.Now), floor, aggression))
	}
	return o
}

// parseConfig decodes js for the policy bound to strategy ("" for the
// generic policy) and validates it by building the strategy over one member,
// so a bad option fails when the service config is parsed, not on first use.
func parseConfig(js json.RawMessage, strategy string) (*Config, error) {
	c := &Config{}
	if len(bytes.TrimSpace(js)) > 0 {
		d := json.NewDecoder(bytes.NewReader(js))
		d.DisallowUnknownFields()
		if err := d.Decode(c); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadConfig, err)
		}
	}
	switch {
	case strategy != "" && c.Strategy != "" && c.Strategy != strategy:
		return nil, fmt.Errorf("%w: policy %s cannot run strategy %q", ErrBadConfig, PolicyName(strategy), c.Strategy)
	case strategy != "":
		c.Strategy = strategy
	case c.Strategy == "":
		c.Strategy = strategies.Default
	}
	if ss := c.SlowStart; ss != nil {
		if _, err := time.ParseDuration(ss.Window); err != nil {
			return nil, fmt.Errorf("%w: slowStart.window %q: %v", ErrBadConfig, ss.Window, err)
		}
	}
	if _, err := strategies.New(c.Strategy, []int{1}, c.options()...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	return c, nil
}
