package strategies

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Starvation under churn: members whose weight never changes (the kept
// ones) are driven beside others that come and go, by SetWeight to 0 and
// back, by Remove and Add, with Forget so that indices are reused, in any
// order and between any picks. A kept member of weight w must be picked at
// least once in every gapBound·Wmax/w picks, Wmax the largest total weight
// present during the wait (whoever else was there, it was owed one pick in
// Wmax/w).

// noStarvation are the rotations the bound is promised for, and the
// longest wait each promises for a kept member of weight w, Wmax the
// largest total weight during the wait: swrr and least-requests (picks
// completed at once: its tie order is swrr's) and nginx-swrr 3·Wmax/w;
// iwrr, which is not smooth, 4·Wmax (its cycle, stretched by joiners).
var noStarvation = map[string]func(wmax, w int) float64{
	"swrr":           smoothBound,
	"least-requests": smoothBound,
	"nginx-swrr":     smoothBound,
	"iwrr":           func(wmax, _ int) float64 { return 4 * float64(wmax) },
}

func smoothBound(wmax, w int) float64 { return 3 * float64(wmax) / float64(w) }

// starveRun drives one strategy and checks every kept member's waits.
type starveRun struct {
	t      testing.TB
	name   string
	s      Dynamic
	bound  func(wmax, w int) float64
	weight []int     // current weights, 0 for removed or drained members
	kept   []bool    // members whose weight never changes
	gone   []bool    // removed, not yet forgotten
	free   []bool    // forgotten: the next Add may return it
	wait   []int     // picks since the kept member's last pick
	wmax   []int     // the largest total weight during that wait
	picks  []int     // picks per member
	owed   []float64 // picks per member by the weights at each pick
	worst  float64
}

func newStarveRun(t testing.TB, name string, w []int, kept int) *starveRun {
	s, err := New(name, w)
	require.NoError(t, err)
	r := &starveRun{t: t, name: name, s: s.(Dynamic), bound: noStarvation[name]}
	for i, x := range w {
		r.weight = append(r.weight, x)
		r.kept = append(r.kept, i < kept)
		r.gone = append(r.gone, false)
		r.free = append(r.free, false)
		r.wait = append(r.wait, 0)
		r.wmax = append(r.wmax, 0)
		r.picks, r.owed = append(r.picks, 0), append(r.owed, 0)
	}
	r.note()
	return r
}

func (r *starveRun) total() int {
	n := 0
	for _, w := range r.weight {
		n += w
	}
	return n
}

// note raises every kept member's Wmax to the weight present now.
func (r *starveRun) note() {
	W := r.total()
	for i := range r.wmax {
		r.wmax[i] = max(r.wmax[i], W)
	}
}

func (r *starveRun) pick() {
	i := r.s.Pick(0)
	require.True(r.t, i >= 0 && i < len(r.weight) && r.weight[i] > 0, "%s: picked %d, weights %v", r.name, i, r.weight)
	r.s.Done(i, time.Millisecond)
	r.picks[i]++
	W := float64(r.total())
	for j, w := range r.weight {
		r.owed[j] += float64(w) / W
	}
	for j := range r.wait {
		if !r.kept[j] {
			continue
		}
		r.wait[j]++
		owed := float64(r.wmax[j]) / float64(r.weight[j])
		r.worst = max(r.worst, float64(r.wait[j])/owed)
		require.LessOrEqual(r.t, float64(r.wait[j]), r.bound(r.wmax[j], r.weight[j])+1,
			"%s: kept member %d (weight %d) waited %d picks, Wmax %d, weights now %v",
			r.name, j, r.weight[j], r.wait[j], r.wmax[j], r.weight)
	}
	if r.kept[i] {
		r.wait[i], r.wmax[i] = 0, r.total()
	}
}

// change applies one change to a member that is not kept: op and x come
// from the driver (random or fuzz bytes).
func (r *starveRun) change(op, x int) {
	var others []int
	for i := range r.weight {
		if !r.kept[i] && !r.gone[i] && !r.free[i] {
			others = append(others, i)
		}
	}
	w := 1 + x%200
	switch op % 4 {
	case 0: // the member comes back with any weight, or drains
		if len(others) > 0 {
			i := others[x%len(others)]
			to := w
			if r.weight[i] > 0 {
				to = 0
			}
			require.NoError(r.t, r.s.SetWeight(i, to))
			r.weight[i] = to
		}
	case 1: // a new member, at a forgotten index when there is one
		i, err := r.s.Add(w)
		require.NoError(r.t, err)
		if i == len(r.weight) {
			r.weight, r.kept, r.gone, r.free = append(r.weight, 0), append(r.kept, false), append(r.gone, false), append(r.free, false)
			r.wait, r.wmax = append(r.wait, 0), append(r.wmax, 0)
			r.picks, r.owed = append(r.picks, 0), append(r.owed, 0)
		}
		require.True(r.t, i < len(r.weight) && (i == len(r.weight)-1 || r.free[i]), "%s: Add returned %d", r.name, i)
		r.weight[i], r.free[i] = w, false
		r.picks[i], r.owed[i] = 0, 0
	case 2: // one leaves, and is forgotten at once or later
		if len(others) > 0 {
			i := others[x%len(others)]
			require.NoError(r.t, r.s.Remove(i))
			r.weight[i], r.gone[i] = 0, true
			if x%2 == 0 {
				require.NoError(r.t, r.s.(Forgetter).Forget(i))
				r.gone[i], r.free[i] = false, true
			}
		}
	case 3:
		for i := range r.gone {
			if r.gone[i] {
				require.NoError(r.t, r.s.(Forgetter).Forget(i))
				r.gone[i], r.free[i] = false, true
				break
			}
		}
	}
	r.note()
}

// TestNoStarvationIssuePattern is the pattern that starved the weight-1
// member: a heavy member comes for two picks and drains for one, 10 000
// times, by SetWeight and by Add, Remove and Forget.
func TestNoStarvationIssuePattern(t *testing.T) {
	for name := range noStarvation {
		t.Run(name+"/setweight", func(t *testing.T) {
			r := newStarveRun(t, name, []int{1, 8, 128}, 2)
			for range 10000 {
				require.NoError(t, r.s.SetWeight(2, 128))
				r.weight[2] = 128
				r.note()
				for range 2 {
					r.pick()
				}
				require.NoError(t, r.s.SetWeight(2, 0))
				r.weight[2] = 0
				r.pick()
			}
			t.Logf("%s: worst wait %.2f of W/w; the member that comes and goes: %d picks, owed %.0f", name, r.worst, r.picks[2], r.owed[2])
			require.GreaterOrEqual(t, float64(r.picks[2]), r.owed[2]/2, "the member that comes and goes gets its share while it is there")
		})
		t.Run(name+"/add-remove", func(t *testing.T) {
			r := newStarveRun(t, name, []int{1, 8}, 2)
			came, owed := 0, 0.0
			for range 10000 {
				r.change(1, 127) // Add(128)
				r.pick()
				r.pick()
				came, owed = came+r.picks[2], owed+r.owed[2]
				r.change(2, 0) // Remove and Forget it
				r.pick()
			}
			t.Logf("%s: worst wait %.2f of W/w; the members that come and go: %d picks, owed %.0f", name, r.worst, came, owed)
			require.GreaterOrEqual(t, float64(came), owed/2, "the members that come and go get their share while they are there")
		})
	}
}

// TestNoStarvationRandomChurn drives random changes between random runs of
// picks over random weights.
func TestNoStarvationRandomChurn(t *testing.T) {
	for name := range noStarvation {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(len(name))))
			worst := 0.0
			for range 300 {
				n := 2 + rng.IntN(5)
				w := make([]int, n)
				for i := range w {
					w[i] = 1 + rng.IntN(150)
				}
				r := newStarveRun(t, name, w, 1+rng.IntN(2))
				for range 400 {
					r.change(rng.IntN(4), rng.IntN(1<<16))
					for range rng.IntN(4) {
						r.pick()
					}
				}
				worst = max(worst, r.worst)
			}
			t.Logf("%s: worst wait %.2f of Wmax/w", name, worst)
		})
	}
}

// FuzzNoStarvation is the same driver from fuzz bytes: the first picks the
// strategy, the next four the weights (two kept), then each byte is a
// change (low two bits) or a run of picks.
func FuzzNoStarvation(f *testing.F) {
	f.Add([]byte{0, 1, 8, 128, 3, 0x81, 0x05, 0x82, 0x07, 0x81})
	f.Add([]byte{1, 1, 100, 50, 50, 0x01, 0xfe, 0x02, 0x11, 0x03, 0x06})
	f.Add([]byte{2, 3, 7, 200, 1, 0x05, 0x09, 0x0d, 0x86, 0x02})
	f.Add([]byte{3, 1, 1, 90, 90, 0x01, 0x84, 0x41, 0x86, 0x02, 0x87})
	names := []string{"swrr", "least-requests", "nginx-swrr", "iwrr"}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 5 {
			return
		}
		name := names[int(data[0])%len(names)]
		w := []int{1 + int(data[1]), 1 + int(data[2]), 1 + int(data[3]), int(data[4])}
		r := newStarveRun(t, name, w, 2)
		for k, b := range data[5:] {
			if b&0x80 != 0 {
				for range int(b & 0x7f) {
					r.pick()
				}
				continue
			}
			r.change(int(b&3), int(b>>2)*131+k)
			r.pick()
		}
		for range 3 * r.total() {
			r.pick()
		}
	})
}
