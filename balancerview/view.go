// Package balancerview is a live web page of dispatchers, for watching a
// running program: per worker pending now and over the last minutes,
// throughput, busy share, weight, picks against each worker's ideal share,
// task-time and wait percentiles, the intake, the faults, and a line per
// tenant and per priority class. It uses the standard library alone; the
// page's HTML, JavaScript and CSS are embedded (no CDN, works offline).
//
//	balancerview.Register("images", d) // d is a *dispatcher.Dispatcher
//	http.Handle("/debug/balancer/", balancerview.Handler())
//
// Cheap to leave on: nothing is added to the dispatcher's hot path. A view
// calls Stats (one call to the balancer goroutine) on its own goroutine,
// once an interval, only for the dispatchers whose page or JSON was read
// within the idle time (WithIdle, 5 s by default); when none was, that
// goroutine exits, and the next read starts it again.
//
// Read-only by default: control (SetWeight, Resize) is served only by a
// handler made with AllowControl, and only for POST requests with a JSON
// body. Stats holds counts, durations and tenant names: no task's value or
// routing key is ever shown.
package balancerview

import (
	"errors"
	"sync"
	"time"

	"github.com/gobalancer/balancer/dispatcher"
)

// Source is what a view samples: *dispatcher.Dispatcher is one.
type Source interface {
	Stats() dispatcher.Stats
}

// Controller is what a handler made with AllowControl changes, when the
// registered Source also has these methods (*dispatcher.Dispatcher has).
type Controller interface {
	SetWeight(i, weight int) error
	Resize(n int) error
}

var _ interface {
	Source
	Controller
} = (*dispatcher.Dispatcher)(nil)

// Defaults of New.
const (
	DefaultInterval = 500 * time.Millisecond
	DefaultHistory  = 5 * time.Minute
	DefaultIdle     = 5 * time.Second
)

// ErrClosed is returned by Register once the view is closed, and is the
// text of its handlers' 503 answers.
var ErrClosed = errors.New("balancerview: closed")

// View is a set of named dispatchers and their recent samples. Its methods
// are safe for concurrent use. The zero value is not usable: call New.
type View struct {
	interval, history, idle time.Duration

	mu      sync.Mutex
	entries map[string]*entry
	running bool // the sampling goroutine is live
	closed  bool
	stop    chan struct{}
	wg      sync.WaitGroup
	starts  int // sampling goroutines started, for the tests
}

// Option configures New.
type Option func(*View)

// WithInterval sets the time between samples while the view is read
// (DefaultInterval; the page polls at the same pace). Values below 50 ms
// are raised to 50 ms.
func WithInterval(d time.Duration) Option {
	return func(v *View) { v.interval = max(d, 50*time.Millisecond) }
}

// WithHistory sets how far back the samples are kept for the page's
// sparklines (DefaultHistory).
func WithHistory(d time.Duration) Option {
	return func(v *View) { v.history = max(d, time.Second) }
}

// WithIdle sets how long after the last read of a dispatcher's page or
// JSON the view keeps sampling it (DefaultIdle; at least two intervals).
func WithIdle(d time.Duration) Option {
	return func(v *View) { v.idle = d }
}

// New returns a view with no dispatcher and no goroutine.
func New(opts ...Option) *View {
	v := &View{interval: DefaultInterval, history: DefaultHistory, idle: DefaultIdle,
		entries: map[string]*entry{}, stop: make(chan struct{})}
	for _, o := range opts {
		o(v)
	}
	v.idle = max(v.idle, 2*v.interval)
	return v
}

// Default is the view of the package-level Register and Handler.
var Default = New()

// Register adds src to Default under name; see View.Register.
func Register(name string, src Source) error { return Default.Register(name, src) }

// Unregister removes name from Default.
func Unregister(name string) { Default.Unregister(name) }

// Register adds src under name, which must be non-empty and not yet
// registered. It takes no sample: sampling starts at the first read.
func (v *View) Register(name string, src Source) error {
	if name == "" || src == nil {
		return errors.New("balancerview: Register needs a name and a source")
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return ErrClosed
	}
	if _, ok := v.entries[name]; ok {
		return errors.New("balancerview: " + name + " is already registered")
	}
	v.entries[name] = newEntry(name, src, v.capacity())
	return nil
}

// Unregister removes name and its samples; the view no longer holds its
// source.
func (v *View) Unregister(name string) {
	v.mu.Lock()
	delete(v.entries, name)
	v.mu.Unlock()
}

// Names returns the registered names, sorted.
func (v *View) Names() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return sortedKeys(v.entries)
}

// Close stops the sampling goroutine, if one runs, and waits for it to
// exit. A closed view takes no sample, and its handlers answer every
// request with 503: the page, its assets, api and control alike, so
// that nothing looks live, and nothing changes, through a view its owner
// has shut.
func (v *View) Close() {
	v.mu.Lock()
	if !v.closed {
		v.closed = true
		close(v.stop)
	}
	v.mu.Unlock()
	v.wg.Wait()
}

// isClosed reports whether Close was called.
func (v *View) isClosed() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.closed
}

// capacity is how many samples fit in the history window.
func (v *View) capacity() int {
	return max(int(v.history/v.interval), 2) + 1
}

// poll records a read of name's samples, starting the sampling goroutine
// if none runs, and returns the entry (nil if unknown or closed).
func (v *View) poll(name string, now time.Time) (e *entry, closed bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil, true
	}
	e = v.entries[name]
	if e == nil {
		return nil, false
	}
	e.lastPoll = now
	if !v.running {
		v.running = true
		v.starts++
		v.wg.Add(1)
		go v.loop()
	}
	return e, false
}

// loop samples, every interval, each entry read within the idle time; it
// exits when there is none, or at Close.
func (v *View) loop() {
	defer v.wg.Done()
	t := time.NewTicker(v.interval)
	defer t.Stop()
	var live []*entry
	for {
		select {
		case <-v.stop:
			v.mu.Lock()
			v.running = false
			v.mu.Unlock()
			return
		case <-t.C:
		}
		now := time.Now()
		live = live[:0]
		v.mu.Lock()
		for _, e := range v.entries {
			if now.Sub(e.lastPoll) <= v.idle {
				live = append(live, e)
			}
		}
		if len(live) == 0 {
			v.running = false
			v.mu.Unlock()
			return
		}
		v.mu.Unlock()
		for _, e := range live {
			e.take(now, v.interval/2)
		}
	}
}
