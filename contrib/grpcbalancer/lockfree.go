package grpcbalancer

import (
	"sync/atomic"

	"github.com/gobalancer/balancer/strategies"
	"google.golang.org/grpc/balancer"
)

// A strategy whose picks depend on nothing a call changes gets a
// lock-free picker, as the strategy itself declares: a strategies.Cyclic
// one repeats a fixed cycle of picks, a strategies.Sampler one is a random
// draw from fixed tables. Both ignore completions, so their state between
// two membership changes is a position in a sequence, which one atomic
// word can hold. Every other strategy keeps a lock (picker.go).
const (
	lfNone     = iota
	lfSchedule // strategies.Cyclic: one cycle of the strategy's picks, replayed
	lfSample   // strategies.Sampler: PickFrom over a shared AtomicRand
)

// lockFreeKind is the lock-free path s declares, if any. A slow start
// declares none: its ramp steps change the strategy on Pick.
func lockFreeKind(s strategies.Strategy) int {
	switch s.(type) {
	case strategies.Cyclic:
		return lfSchedule
	case strategies.Sampler:
		return lfSample
	}
	return lfNone
}

// maxSchedule caps a replayed cycle (4 bytes an entry, so 256 KiB): a
// cycle of the weighted strategies is the weights' sum over their GCD, and
// one beyond this keeps the mutex rather than spend that memory and the
// picks to record it on every membership change.
const maxSchedule = 1 << 16

// cacheLine keeps a cursor's word apart from whatever the allocator puts
// next to it: every pick of the channel writes it.
const cacheLine = 64

// cursor is a channel's lock-free path for one config, its position in its
// schedule or its random state. It outlives pickers, so an update that
// keeps the weights continues the schedule where it was instead of
// restarting it at its head (gRPC sends a new picker whenever any child
// changes state), and one that changes them lands at a phase set by the
// picks so far, not always at the head; the random state goes on through
// every update, as the strategy's would.
type cursor struct {
	kind int
	rng  *strategies.AtomicRand // lfSample: the strategy's generator, at its seed
	_    [cacheLine]byte
	n    atomic.Uint64 // lfSchedule: picks so far
	_    [cacheLine - 8]byte
}

// newCursor returns the cursor of cfg's strategy: which lock-free path it
// declares, and for a Sampler a generator seeded as the strategy is. The
// declaration does not depend on the weights, so a strategy built over
// one member tells it.
func newCursor(cfg *Config) *cursor {
	c := &cursor{}
	s, err := strategies.New(cfg.Strategy, []int{1}, cfg.options()...)
	if err != nil {
		return c // parseConfig built it; should it fail now, the mutex path reports why
	}
	c.kind = lockFreeKind(s)
	if sm, ok := s.(strategies.Sampler); ok {
		c.rng = sm.NewRand()
	}
	return c
}

// selector is the immutable part of a lock-free picker: what a pick maps
// the cursor to. Pickers of the same weights share it.
type selector struct {
	cur   *cursor
	sched []int32            // lfSchedule: member per position
	smp   strategies.Sampler // lfSample: the strategy over the weights, only read
}

// newSelector builds the selector of cfg's strategy over members with the
// given weights, on the lock-free path cur says. ok is false when the
// strategy's cycle is too long to replay (the caller keeps the mutex).
func newSelector(cfg *Config, weights []int, cur *cursor) (_ *selector, ok bool, err error) {
	s, err := strategies.New(cfg.Strategy, weights, cfg.options()...)
	if err != nil {
		return nil, false, err
	}
	sel := &selector{cur: cur}
	switch cur.kind {
	case lfSchedule:
		sel.sched, ok = record(s, len(weights))
		return sel, ok, nil
	case lfSample:
		// The picker never changes s: it only reads it, from any number
		// of goroutines, which Sampler allows between membership changes.
		sel.smp, ok = s.(strategies.Sampler)
		return sel, ok, nil
	}
	return nil, false, nil
}

// record returns one cycle of a Cyclic strategy's picks from its initial
// state, or false when the cycle exceeds maxSchedule or the next cycle
// does not give every member the same number of picks (replaying it would
// not then be the strategy: fall back to calling it under the mutex).
func record(s strategies.Strategy, members int) ([]int32, bool) {
	cy, ok := s.(strategies.Cyclic)
	if !ok {
		return nil, false
	}
	c := cy.Cycle()
	if c <= 0 || c > maxSchedule {
		return nil, false
	}
	sched := make([]int32, c)
	count := make([]int, members)
	for k := range sched {
		i := s.Pick(0)
		if i < 0 || i >= members {
			return nil, false
		}
		sched[k] = int32(i)
		count[i]++
	}
	for range c {
		i := s.Pick(0)
		if i < 0 || i >= members {
			return nil, false
		}
		count[i]--
	}
	for _, n := range count {
		if n != 0 {
			return nil, false
		}
	}
	return sched, true
}

// next returns the member of the next pick.
func (s *selector) next() int32 {
	if s.smp != nil {
		return int32(s.smp.PickFrom(s.cur.rng))
	}
	k := s.cur.n.Add(1) - 1
	return s.sched[k%uint64(len(s.sched))]
}

// lockFreePicker is the picker of a lock-free strategy: one atomic add (two
// on a rare random rejection) and the child's pick. Its Done is the child's:
// these strategies ignore completions, so there is nothing to report and
// nothing to allocate.
type lockFreePicker struct {
	sel     *selector
	pickers []balancer.Picker // member index -> READY child's picker
}

func (p *lockFreePicker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	return p.pickers[p.sel.next()].Pick(info)
}
