package strategies

import (
	"fmt"
	"sort"
	"strings"
)

// Constructor builds a strategy over members with the given weights.
type Constructor func(weights []int, opts ...Option) (Strategy, error)

// registry maps the short names used by flags and configuration (brpc's
// convention) to constructors. It is filled by each strategy's file and never
// changes after init, so reading it needs no lock.
var registry = map[string]Constructor{}

// register is called from each strategy file's init: a strategy is added
// by its own file, strategies/<name>.go, whose init registers its
// constructor under its name. The tests then hold it to the package's
// promises by that name (conformance_test.go's behaviour table must list
// what distribution it promises), and to its declarations: it must
// declare its Traits (Declarer), and, if it is Dynamic, forget
// (Forgetter); see TestEveryStrategyDeclares and TestDeclaredTraits.
func register(name string, c Constructor) {
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

// New builds the strategy registered under name. An unknown name yields an
// error wrapping ErrUnknown that lists the valid names. With WithSlowStart
// the strategy comes wrapped in a *SlowStart.
func New(name string, weights []int, opts ...Option) (Strategy, error) {
	c, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (valid: %s)", ErrUnknown, name, strings.Join(Names(), ", "))
	}
	if ss := newConfig(opts).slowStart; ss != nil {
		return NewSlowStart(c, weights, ss.window, ss.floor, ss.aggression, opts...)
	}
	return c(weights, opts...)
}
