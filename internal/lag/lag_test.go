package lag_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/gobalancer/balancer/internal/lag"
	"github.com/stretchr/testify/assert"
)

func TestMax(t *testing.T) {
	assert.InDelta(t, 0.5, lag.Max([]int{1, 1}, []int{0, 1, 0, 1}), 1e-12)
	assert.InDelta(t, 1.0, lag.Max([]int{1, 1}, []int{0, 0, 1, 1}), 1e-12)
	assert.InDelta(t, 2.0/3, lag.Max([]int{2, 1}, []int{0, 0, 1}), 1e-12)
	assert.InDelta(t, 2.0, lag.Max([]int{1, 1}, []int{0, 0, 0, 0}), 1e-12)
	assert.True(t, math.IsNaN(lag.Max([]int{0}, []int{0})), "NaN when W is 0")
}

func TestMaxNum(t *testing.T) {
	num, W := lag.MaxNum([]int{2, 1}, []int{0, 0, 1})
	assert.Equal(t, int64(2), num)
	assert.Equal(t, int64(3), W)
	num, W = lag.MaxNum([]int{1, 1}, []int{0, 5, 1}) // 5 is no member: a slot only
	assert.Equal(t, int64(2), num)
	assert.Equal(t, int64(2), W)
}

// Max measures smoothness: weights 2,1 served smoothly, then lightest
// first.
func ExampleMax() {
	w := []int{2, 1}
	fmt.Printf("%.2f %.2f\n", lag.Max(w, []int{0, 1, 0}), lag.Max(w, []int{1, 0, 0}))
	// Output: 0.33 0.67
}
