package dispatcher

import (
	"runtime"
	"sync"
	"time"
)

// A task that makes a blocking submit to its own dispatcher while there is
// no room waits for room that may need its own worker to finish first:
// with one worker, or every worker doing the same, nothing progresses until
// Close. So a blocking submit that has waited nestedAfter for room checks
// whether it runs on one of the dispatcher's own workers, and if so returns
// ErrNestedSubmit instead of waiting on. Any other submitter just waits.
//
// Go has no goroutine-local state: the dispatcher keeps the ids of its
// workers' goroutines (recorded when each starts its loop) and reads the
// waiting caller's id from its stack trace (about 2 µs), only once a wait
// has lasted nestedAfter. The submit paths pay a pooled timer per wait
// that blocks, nothing per request.
const nestedAfter = 10 * time.Millisecond

type ownGoroutines struct {
	ids    sync.Map  // goroutine id → struct{}: the workers' goroutines
	timers sync.Pool // *time.Timer, stopped
}

func (o *ownGoroutines) enter() { o.ids.Store(goid(), struct{}{}) }
func (o *ownGoroutines) leave() { o.ids.Delete(goid()) }

// mine reports whether the caller runs on one of the dispatcher's workers.
func (o *ownGoroutines) mine() bool {
	_, ok := o.ids.Load(goid())
	return ok
}

// timer returns a timer that fires once after nestedAfter; give it back
// with done.
func (o *ownGoroutines) timer() *time.Timer {
	if t, ok := o.timers.Get().(*time.Timer); ok {
		t.Reset(nestedAfter)
		return t
	}
	return time.NewTimer(nestedAfter)
}

// done stops t and keeps it for the next wait. Since Go 1.23 a stopped
// timer's channel delivers nothing stale, so it is safe to reuse.
func (o *ownGoroutines) done(t *time.Timer) {
	t.Stop()
	o.timers.Put(t)
}

// goid returns the calling goroutine's id, read from the first line of its
// stack trace ("goroutine 123 [running]:").
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) {
		return 0
	}
	var id uint64
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
