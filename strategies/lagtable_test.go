package strategies

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gobalancer/balancer/internal/lag"
	"github.com/stretchr/testify/assert"
)

var lagTable = flag.Bool("lagtable", false, "print the lag table of docs/strategies.md")

// TestPrintLagTable computes the smoothness table of docs/strategies.md (4
// cycles of W picks each, every request done before the next pick), checks
// the claims the docs make of it, and prints it with -lagtable:
//
//	go test -count=1 -run TestPrintLagTable -v ./strategies/ -args -lagtable
func TestPrintLagTable(t *testing.T) {
	vecs := lagVectors()
	order := []string{"100,100,25", "100,100,66", "100,100,66,1", "7,5,3,1", "5,1,1", "1000 + 999×1"}
	r := rand.New(rand.NewPCG(11, 11))
	var random [][]int
	for range 20 {
		w := make([]int, 2+r.IntN(30))
		for i := range w {
			w[i] = 1 + r.IntN(100)
		}
		random = append(random, w)
	}
	type row struct {
		name  string
		picks func(w []int, n int) []int
	}
	viaStrategy := func(name string) func([]int, int) []int {
		return func(w []int, n int) []int {
			s, err := New(name, w)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]int, n)
			for k := range out {
				out[k] = s.Pick(uint64(k) * 0x9e3779b97f4a7c15)
				s.Done(out[k], time.Millisecond)
			}
			return out
		}
	}
	rows := []row{
		{"swrr", viaStrategy("swrr")},
		{"nginx-swrr", viaStrategy("nginx-swrr")},
		{"least-requests (ties)", viaStrategy("least-requests")},
		{"iwrr", viaStrategy("iwrr")},
		{"GCD WRR, lua-resty-balancer (reference)", func(w []int, n int) []int {
			g := newGCDWRR(w)
			out := make([]int, n)
			for k := range out {
				out[k] = g.Pick()
			}
			return out
		}},
		{"weighted-random", viaStrategy("weighted-random")},
		{"p2c", viaStrategy("p2c")},
	}
	lags := map[string]float64{} // "row/vector"
	var b strings.Builder
	fmt.Fprintf(&b, "| strategy | %s | 20 random vectors (max) |\n|---|", strings.Join(order, " | "))
	b.WriteString(strings.Repeat("---|", len(order)+1) + "\n")
	for _, rw := range rows {
		fmt.Fprintf(&b, "| %s |", rw.name)
		for _, name := range order {
			w := vecs[name]
			lag := lag.Max(w, rw.picks(w, 4*sum(w)))
			lags[rw.name+"/"+name] = lag
			fmt.Fprintf(&b, " %.3f |", trunc3(lag))
		}
		worst := 0.0
		for _, w := range random {
			worst = max(worst, lag.Max(w, rw.picks(w, 4*sum(w))))
		}
		lags[rw.name+"/random"] = worst
		fmt.Fprintf(&b, " %.3f |\n", trunc3(worst))
	}
	for _, name := range append(order, "random") {
		assert.Less(t, lags["swrr/"+name], 1.0, "swrr lag on %s", name)
		// least-requests' ties are swrr's order.
		assert.Less(t, lags["least-requests (ties)/"+name], 1.0, "least-requests lag on %s", name)
	}
	// nginx's rule on these vectors, as README.md and docs/strategies.md
	// print it.
	for k, want := range []float64{0.666, 0.706, 0.835, 0.687, 0.571, 0.998} {
		assert.InDelta(t, want, trunc3(lags["nginx-swrr/"+order[k]]), 1e-9, "nginx-swrr on %s", order[k])
	}
	assert.InDelta(t, 0.939, trunc3(lags["nginx-swrr/random"]), 1e-9, "nginx-swrr on random vectors")
	// iwrr is as bursty as the lua-resty-balancer WRR issue's algorithm on its vector, as documented.
	assert.InDelta(t, lags["GCD WRR, lua-resty-balancer (reference)/100,100,66"], lags["iwrr/100,100,66"], 1e-9)
	assert.Greater(t, lags["iwrr/100,100,66"], 8.0)
	if *lagTable {
		t.Log("\n" + b.String())
	}
}

// trunc3 truncates, so a lag just under 1 does not print as 1.000.
func trunc3(x float64) float64 { return math.Floor(x*1000) / 1000 }
