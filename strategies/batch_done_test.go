package strategies

import (
	"math/rand/v2"
	"testing"
)

// TestLeastPendingDoneN: DoneN(i, n) picks exactly like n calls of Done(i).
func TestLeastPendingDoneN(t *testing.T) {
	weights := []int{1, 2, 1, 3, 0, 1}
	one, err := newLeastPending(weights)
	if err != nil {
		t.Fatal(err)
	}
	batch, _ := newLeastPending(weights)
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 20000 {
		if rng.IntN(3) > 0 {
			a, b := one.Pick(0), batch.Pick(0)
			if a != b {
				t.Fatalf("step %d: Pick %d after Done, %d after DoneN", step, a, b)
			}
			continue
		}
		i := rng.IntN(len(weights) + 1) // one out of range
		n := rng.IntN(5)
		for range n {
			one.Done(i, 0)
		}
		batch.DoneN(i, n, 0)
		for j := range weights {
			if one.Pending(j) != batch.Pending(j) {
				t.Fatalf("step %d: member %d pending %d after Done, %d after DoneN", step, j, one.Pending(j), batch.Pending(j))
			}
		}
	}
}
