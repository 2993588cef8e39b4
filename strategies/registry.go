package strategies

import (
	"fmt"
	"sort"
	"strings"
)

// constructor builds a strategy over members with the given weights.
type constructor func(weights []int, opts ...Option) (Strategy, error)

// registry maps the short names used by flags and configuration (brpc's
// convention) to constructors. It is filled by each strategy's file and never
// changes after init, so reading it needs no lock.
var registry = map[string]constructor{}

// register is called from each strategy file's init: a strategy is added
// by its own file, strategies/<name>.go, whose init registers its
// constructor under its name. The tests then hold it to the package's
// promises by that name (conformance_test.go's behaviour table must list
// what distribution it promises), and to its declarations: it must
// declare its Traits (Declarer), and, if it is Dynamic, forget
// (Forgetter); see TestEveryStrategyDeclares and TestDeclaredTraits.
func register(name string, c constructor) {
	if _, dup := registry[name]; dup {
		panic("strategies: duplicate registration of " + name) // programming error at init
	}
	registry[name] = c
}

// Default is the name of the default strategy, Pike's least-pending heap.
const Default = "least-pending"

// Names returns every registered name, sorted, for help texts.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// New builds the strategy registered under name over members with the
// given weights. An unknown name yields an error wrapping ErrUnknown that
// lists the valid names; bad weights, one of ErrNoMembers,
// ErrNegativeWeight, ErrTooLarge or ErrAllZero; an option the strategy has
// no use for or a value out of range, ErrBadOption. The names, with the
// options each takes besides WithSeed and WithSlowStart (which all take):
//
//   - least-pending (Default): fewest pending requests, ties round-robin
//     (Pike's heap balancer); weights only gate membership.
//   - least-requests: fewest pending per weight, idle members in swrr's
//     order.
//   - round-robin: members in turn; WithRandomStart.
//   - random: uniform; weighted-random: in proportion to weights (Vose's
//     alias method).
//   - swrr: smooth weighted round-robin, lag below one pick (5,1,1 gives
//     a a a b a c a).
//   - nginx-swrr: nginx's smooth weighted round-robin, exactly (5,1,1
//     gives a a b a c a a), O(n) a pick.
//   - iwrr: kitex's interleaved weighted round-robin, O(1) but bursty;
//     WithRandomStart.
//   - p2c: the less loaded of two weighted draws.
//   - latency: lowest latency EWMA times pending, per weight; WithDecay.
//   - consistent-hash: a ring over the routing key; WithVirtualNodes.
//   - bounded-hash: the ring, with loads bounded; WithVirtualNodes and
//     WithLoadFactor.
//
// Every strategy New builds is Dynamic, a Forgetter and a Declarer; those
// whose picks allow it are Cyclic (round-robin, swrr, nginx-swrr, iwrr) or
// Sampler (random, weighted-random); least-pending and any under slow start
// are BatchDone. docs/strategies.md has each one's algorithm, source, cost
// and guarantees.
func New(name string, weights []int, opts ...Option) (Strategy, error) {
	c, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (valid: %s)", ErrUnknown, name, strings.Join(Names(), ", "))
	}
	var s Strategy
	var err error
	if ss := newConfig(opts).slowStart; ss != nil {
		s, err = newSlowStart(c, weights, ss.window, ss.floor, ss.aggression, opts...)
	} else {
		s, err = c(weights, opts...)
	}
	if err != nil {
		return nil, err // the constructors' typed nil would make a non-nil Strategy
	}
	return s, nil
}
