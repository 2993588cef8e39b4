package balancerview

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/gobalancer/balancer/dispatcher"
)

// Sample is what the JSON endpoint serves: the latest Stats of one
// dispatcher, figures derived from the last few seconds of samples, and
// the history the page draws. Durations are in nanoseconds.
type Sample struct {
	Name     string
	Seq      int64         // the latest sample's number: 1, 2, … (0: none yet)
	Time     time.Time     // when it was taken
	Interval time.Duration // between samples while the view is read
	Window   time.Duration // how far back samples are kept (WithHistory)
	Control  bool          // this handler takes POST control requests

	Stats dispatcher.Stats // the latest snapshot, as Stats returned it

	// Rate is completions per second over RateWindow, the time between
	// the latest sample and the earlier one the rates are taken against
	// (about RateSpan; 0 while there is a single sample).
	Rate       float64
	RateWindow time.Duration
	Workers    []Worker

	// History holds the samples after the request's ?after=SEQ (all that
	// are kept without it), oldest first.
	History []Point
}

// Worker is one worker of the latest sample with what the page derives.
type Worker struct {
	Index     int
	Weight    int
	Removed   bool
	Pending   int
	Completed int64
	// Picks is how many requests the strategy gave it: Completed + Pending.
	Picks int64
	// Share is its ideal share of the picks, Weight over the live workers'
	// total weight (0 once removed); Lag is Picks − Share × the live
	// workers' total picks: how far ahead (+) or behind (−) it is.
	Share float64
	Lag   float64
	Rate  float64 // completions per second over RateWindow
	Busy  float64 // the share of RateWindow it spent running tasks (0 to 1)
}

// Point is one sample, compactly, for the sparklines.
type Point struct {
	Seq       int64
	Time      int64 // Unix milliseconds
	Completed int64
	Queued    int
	Blocked   int
	Pending   []int   // per worker index
	Done      []int64 // completed per worker index
}

// RateSpan is how far back the rates look: the latest sample against the
// newest one at least this old (the oldest kept, early on).
const RateSpan = 3 * time.Second

type entry struct {
	name string
	src  Source

	// lastPoll is guarded by the View's mu.
	lastPoll time.Time

	mu     sync.Mutex
	seq    int64
	latest dispatcher.Stats
	at     time.Time
	ring   []sampled // oldest first, at most cap
	cap    int
}

// sampled is a kept sample: its point and what the rates need.
type sampled struct {
	p    Point
	busy []time.Duration
}

func newEntry(name string, src Source, capacity int) *entry {
	return &entry{name: name, src: src, cap: capacity}
}

// take samples the source unless a sample is younger than fresh.
func (e *entry) take(now time.Time, fresh time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seq > 0 && now.Sub(e.at) < fresh {
		return
	}
	s := e.src.Stats()
	e.seq++
	e.latest, e.at = s, now
	p := Point{Seq: e.seq, Time: now.UnixMilli(), Completed: s.Completed, Queued: s.Queued, Blocked: s.Blocked,
		Pending: make([]int, len(s.Workers)), Done: make([]int64, len(s.Workers))}
	busy := make([]time.Duration, len(s.Workers))
	for i, w := range s.Workers {
		p.Pending[i], p.Done[i], busy[i] = w.Pending, w.Completed, w.Busy
	}
	if len(e.ring) == e.cap {
		copy(e.ring, e.ring[1:])
		e.ring = e.ring[:len(e.ring)-1]
	}
	e.ring = append(e.ring, sampled{p: p, busy: busy})
}

// sample builds the JSON answer: history after seq after.
func (e *entry) sample(after int64) Sample {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := Sample{Name: e.name, Seq: e.seq, Time: e.at, Stats: e.latest}
	s.Stats.Workers = slices.Clone(e.latest.Workers)
	i := sort.Search(len(e.ring), func(i int) bool { return e.ring[i].p.Seq > after })
	for _, r := range e.ring[i:] {
		s.History = append(s.History, r.p)
	}
	if s.History == nil {
		s.History = []Point{}
	}
	var ref *sampled
	if n := len(e.ring); n > 1 {
		last := e.ring[n-1].p.Time
		ref = &e.ring[0]
		for j := n - 2; j >= 0; j-- {
			if last-e.ring[j].p.Time >= RateSpan.Milliseconds() {
				ref = &e.ring[j]
				break
			}
		}
		s.RateWindow = time.Duration(last-ref.p.Time) * time.Millisecond
	}
	s.Workers, s.Rate = derive(s.Stats, ref, s.RateWindow)
	return s
}

// derive computes the per-worker figures of st against the reference
// sample ref, taken window earlier (nil: no rates).
func derive(st dispatcher.Stats, ref *sampled, window time.Duration) ([]Worker, float64) {
	ws := make([]Worker, len(st.Workers))
	var weights, picks int64
	for _, w := range st.Workers {
		if !w.Removed {
			weights += int64(w.Weight)
			picks += w.Completed + int64(w.Pending)
		}
	}
	secs := window.Seconds()
	var rate float64
	if ref != nil && secs > 0 {
		rate = float64(st.Completed-ref.p.Completed) / secs
	}
	for i, w := range st.Workers {
		v := Worker{Index: w.Index, Weight: w.Weight, Removed: w.Removed, Pending: w.Pending,
			Completed: w.Completed, Picks: w.Completed + int64(w.Pending)}
		if !w.Removed && weights > 0 {
			v.Share = float64(w.Weight) / float64(weights)
			v.Lag = float64(v.Picks) - v.Share*float64(picks)
		}
		// A worker index reused since ref (AddWorker after a removal)
		// starts again from zero: no rate for it until ref is newer.
		if ref != nil && secs > 0 && i < len(ref.p.Done) && w.Completed >= ref.p.Done[i] && w.Busy >= ref.busy[i] {
			v.Rate = float64(w.Completed-ref.p.Done[i]) / secs
			v.Busy = min(float64(w.Busy-ref.busy[i])/float64(window), 1)
		}
		ws[i] = v
	}
	return ws, rate
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
