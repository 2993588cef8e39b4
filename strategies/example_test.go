package strategies_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/gobalancer/balancer/strategies"
)

// Smooth weighted round-robin spreads a heavy member's picks between the
// light ones, and every cycle of W picks gives exact shares.
func Example_swrr() {
	s, _ := strategies.New("swrr", []int{5, 1, 1})
	picks := make([]int, 14)
	for k := range picks {
		picks[k] = s.Pick(0)
	}
	fmt.Println(picks)
	// Output: [0 0 0 1 0 2 0 0 0 0 1 0 2 0]
}

// nginx's smooth weighted round-robin gives nginx's exact order, for
// configurations that rely on it; swrr's differs (a a a b a c a).
func Example_nginxSWRR() {
	s, _ := strategies.New("nginx-swrr", []int{5, 1, 1})
	for range 7 {
		fmt.Print(string("abc"[s.Pick(0)]), " ")
	}
	fmt.Println()
	// Output: a a b a c a a
}

// kitex's interleaved WRR is O(1) but bursty: the light members are spent
// first, then the heavy one runs alone.
func Example_iwrr() {
	s, _ := strategies.New("iwrr", []int{5, 1, 1})
	for range 7 {
		fmt.Print(s.Pick(0), " ")
	}
	fmt.Println()
	// Output: 0 1 2 0 0 0 0
}

// Strategies are built by name from flags or configuration; an unknown
// name lists the valid ones.
func ExampleNew() {
	s, err := strategies.New("least-requests", []int{1, 1, 2})
	if err != nil {
		panic(err)
	}
	a, b := s.Pick(0), s.Pick(0)
	s.Done(a, time.Millisecond)
	fmt.Println(a, b)

	_, err = strategies.New("fastest", []int{1})
	fmt.Println(errors.Is(err, strategies.ErrUnknown))
	// Output:
	// 2 0
	// true
}

// Consistent hashing keeps a key on its member; removing a member moves
// only the keys it held.
func Example_consistentHash() {
	s, _ := strategies.New("consistent-hash", strategies.Equal(4))
	before := s.Pick(12345)
	fmt.Println(s.Pick(12345) == before)

	other := (before + 1) % 4
	_ = s.(strategies.Dynamic).Remove(other)
	fmt.Println(s.Pick(12345) == before)
	// Output:
	// true
	// true
}

// Bounded-load hashing sends a hot key elsewhere once its member holds
// more than ⌈c·mean⌉ pending requests.
func Example_boundedHash() {
	s, _ := strategies.New("bounded-hash", strategies.Equal(4), strategies.WithLoadFactor(1.25))
	seen := map[int]bool{}
	for range 8 { // eight requests for the same key, none completed
		seen[s.Pick(7)] = true
	}
	fmt.Println(len(seen) > 1)
	// Output: true
}

// Dynamic membership: a drained member (weight 0) is never picked, and the
// last member with a positive weight cannot be removed.
func ExampleDynamic() {
	s, _ := strategies.New("weighted-random", []int{1, 1}, strategies.WithSeed(1))
	d := s.(strategies.Dynamic) // every strategy New builds is Dynamic
	_ = d.SetWeight(0, 0)
	fmt.Println(s.Pick(0), s.Pick(0), s.Pick(0))
	fmt.Println(errors.Is(d.Remove(1), strategies.ErrLastMember))
	// Output:
	// 1 1 1
	// true
}

// String routing keys: the same user always reaches the same member.
func ExampleStringKey() {
	s, err := strategies.New("consistent-hash", strategies.Equal(4))
	if err != nil {
		panic(err)
	}
	a := s.Pick(strategies.StringKey("user-42"))
	b := s.Pick(strategies.StringKey("user-42"))
	fmt.Println(a == b, strategies.StringKey("user-42") == strategies.StringKey("user-43"))
	// Output: true false
}
