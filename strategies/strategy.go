// Package strategies holds every selection algorithm the balancer can use
// to pick a member (a worker in-process, an endpoint for an RPC or HTTP
// client). The package is pure: no goroutines, no channels, no context.
// A strategy is built by name with New (Names lists them); the algorithms'
// types are unexported, and what a caller may do with one beyond Strategy
// is what the interfaces below say it implements (Dynamic, Forgetter,
// BatchDone, Cyclic, Sampler, Declarer).
// Strategies are not safe for concurrent use unless they declare it
// (Traits.Concurrent, read with TraitsOf); whoever shares one serializes
// access (the dispatcher does it by owning the strategy from a single
// goroutine). A strategy's Traits also say whether Done reads its elapsed
// time or does anything at all, and the Cyclic and Sampler interfaces let
// a caller pick from many goroutines without a lock where the algorithm
// allows it.
//
// Members are identified by dense indices: the weights given to a
// constructor are members 0..n-1, and Add returns the next unused index.
// A removed member's index stays invalid, and is reused only after the
// caller forgets it (Forgetter): then Add returns the lowest forgotten
// index first. A caller that never calls Forget never sees an index twice.
package strategies

import (
	"errors"
	"fmt"
	"time"
)

// Strategy picks the member for the next request and learns when a request
// completes. Pick counts the request against the member it returns (load
// aware strategies treat it as pending until Done).
type Strategy interface {
	// Pick returns the member for the next request. key is the request's
	// routing key; only affinity strategies look at it.
	Pick(key uint64) int
	// Done reports that a request picked for member i completed after
	// elapsed. Stateless strategies ignore it.
	Done(i int, elapsed time.Duration)
}

// BatchDone is implemented by strategies that can take several
// completions of one member at once. DoneN(i, n, elapsed) must have the
// effect of n calls of Done(i, elapsed); a caller that reaps completions in
// batches (the dispatcher) uses it to update its state once per batch.
type BatchDone interface {
	DoneN(i, n int, elapsed time.Duration)
}

// Dynamic is a Strategy whose membership can change at runtime. Each change
// keeps the algorithm's state sensible: no burst towards a new member and no
// reset that starves anyone, however the changes follow each other. swrr
// bounds it: counted from a change, a member's picks stay within 2 of its
// share of them by the new weights (the largest |picks_i(t) − t·w_i/W′|
// over their prefixes is below 2 in every test), and a member whose weight
// w does not change is picked at least once in every 3·W/w picks whatever the others
// do (come and go, change weight, are forgotten and reused), W the largest
// total weight in that time. least-requests' members with nothing pending
// go in swrr's order, so the same bounds hold for it when every pick is
// completed before the next (see leastRequests); nginx-swrr keeps the
// 3·W/w bound too; iwrr, which is not smooth, picks such a member at
// least once in every 4·W picks and gives one that comes back the next
// pick (see iwrr.Add). The randomised and hashing strategies keep shares
// in expectation, not bounds.
type Dynamic interface {
	Strategy
	// Add adds a member with the given weight and returns its index.
	Add(weight int) (int, error)
	// Remove removes member i; it is never picked again. Done may still be
	// called for requests it had, and is ignored.
	Remove(i int) error
	// SetWeight changes member i's weight; weight 0 drains it.
	SetWeight(i int, weight int) error
}

// Forgetter is a Dynamic strategy that can reuse the index of a removed
// member, so that its memory and the cost of a membership change stay
// bounded by the members it holds, not by every member ever added.
//
// Forget(i) says that member i, removed, will get no more Done calls (its
// requests have completed or been given up); from then on a later Add may
// return i. Add returns the lowest forgotten index if there is one, else a
// new one. An index is never reused before its Forget, so a caller that
// still reports Done for a removed member's draining requests is safe
// until it forgets it. Forget of a member that is present, was never
// handed out or is already forgotten changes nothing and returns an error
// matching ErrNotRemoved.
//
// Every Dynamic strategy of this package is a Forgetter (slow start over a
// wrapped strategy that is one), and Forget costs at most O(log n).
type Forgetter interface {
	Forget(i int) error
}

// Sentinel errors. Callers test them with errors.Is.
var (
	// ErrNoMembers: a strategy needs at least one member.
	ErrNoMembers = errors.New("strategies: no members")
	// ErrNegativeWeight: weights are zero (never picked) or positive.
	ErrNegativeWeight = errors.New("strategies: negative weight")
	// ErrAllZero: at least one member must have a positive weight.
	ErrAllZero = errors.New("strategies: every weight is zero")
	// ErrUnknown: no strategy is registered under that name.
	ErrUnknown = errors.New("strategies: unknown strategy")
	// ErrNoMember: the index is out of range or the member was removed.
	ErrNoMember = errors.New("strategies: no such member")
	// ErrNotRemoved: Forget was given an index that is not a removed
	// member waiting for it: one present, never handed out, or already
	// forgotten.
	ErrNotRemoved = errors.New("strategies: not a removed member")
	// ErrLastMember: the change would leave no member with a positive weight.
	ErrLastMember = errors.New("strategies: change leaves no member with positive weight")
	// ErrBadOption: an option's value is out of range.
	ErrBadOption = errors.New("strategies: bad option")
	// ErrTooLarge: a weight or member count exceeds what the algorithm supports.
	ErrTooLarge = errors.New("strategies: too large")
)

// MaxWeight is the largest weight any strategy accepts. It keeps the
// integer arithmetic of the weighted algorithms free of overflow.
const MaxWeight = 1 << 20

// CheckWeights reports whether weights are valid for every constructor:
// at least one, none negative or above MaxWeight, at least one positive.
// The error matches ErrNoMembers, ErrNegativeWeight, ErrTooLarge or
// ErrAllZero. It lets a caller that takes weights for a strategy it did
// not build (a custom one) refuse what a constructor would.
func CheckWeights(weights []int) error { return checkWeights(weights) }

// checkWeights validates a constructor's weights.
func checkWeights(weights []int) error {
	if len(weights) == 0 {
		return ErrNoMembers
	}
	positive := false
	for i, w := range weights {
		if w < 0 {
			return fmt.Errorf("%w: member %d has weight %d", ErrNegativeWeight, i, w)
		}
		if w > MaxWeight {
			return fmt.Errorf("%w: member %d has weight %d (max %d)", ErrTooLarge, i, w, MaxWeight)
		}
		if w > 0 {
			positive = true
		}
	}
	if !positive {
		return ErrAllZero
	}
	return nil
}

// checkWeight validates one weight given to Add or SetWeight.
func checkWeight(w int) error {
	if w < 0 {
		return fmt.Errorf("%w: %d", ErrNegativeWeight, w)
	}
	if w > MaxWeight {
		return fmt.Errorf("%w: weight %d (max %d)", ErrTooLarge, w, MaxWeight)
	}
	return nil
}

// Equal returns n weights of 1, for callers that want an unweighted set.
func Equal(n int) []int {
	w := make([]int, n)
	for i := range w {
		w[i] = 1
	}
	return w
}
