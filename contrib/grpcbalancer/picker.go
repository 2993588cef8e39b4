package grpcbalancer

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobalancer/balancer/strategies"
	"google.golang.org/grpc/balancer"
)

// shared is one strategy and the child picker of each of its members, for
// the strategies without a lock-free form (lockfree.go). The balancer
// changes it on membership updates; pickers and Done callbacks use it
// concurrently. The strategy's declared traits (strategies.TraitsOf) set
// how:
//
//   - Concurrent: picks and Dones hold rw for reading, so they run at
//     once; a membership change holds it for writing (and mu).
//   - Otherwise every access holds mu. The critical section is one
//     Strategy.Pick or Strategy.Done plus a slice read: see BenchmarkPick.
//     Only Pick waits for mu. A Done that finds it held leaves its call on
//     owed and returns, and whoever holds mu next reports it before doing
//     anything else (lock): every Pick that starts after a Done returned
//     still sees that completion, but a busy channel takes one contended
//     lock per call, not two, and Done, which runs on gRPC's stream
//     teardown, never parks.
//
// A strategy that IgnoresDone gets no Done at all (a call's Done is the
// child's), and one that IgnoresElapsed is not clocked.
//
// A removed member is forgotten (strategies.Forgetter) once no Done can
// come for it any more, so that the strategy reuses its index and a
// channel whose endpoints come and go keeps it at the size of the
// endpoints it has: at once if the strategy ignores Done, else, on the
// mutex path, when the last call picked for it is reported (inflight
// counts them). A concurrent strategy whose Done matters (none of the
// strategies package's) is never told to forget.
type shared struct {
	mu         sync.Mutex
	rw         sync.RWMutex // concurrent only
	s          strategies.Strategy
	pickers    []balancer.Picker // member index -> READY child's picker; nil once removed
	concurrent bool              // s is safe for concurrent Pick and Done
	noDone     bool              // s ignores Done: report nothing
	counted    bool              // mutex path with Done reported: inflight is kept
	timed      bool              // s reads Done's elapsed: clock the calls
	inflight   []int32           // counted: calls picked and not yet reported, per member
	draining   []bool            // counted: removed, to be forgotten when inflight reaches 0
	owed       atomic.Pointer[call]
}

func newShared(s strategies.Strategy, pickers []balancer.Picker) *shared {
	t := strategies.TraitsOf(s)
	sh := &shared{s: s, pickers: pickers, concurrent: t.Concurrent, noDone: t.IgnoresDone, timed: !t.IgnoresElapsed}
	sh.counted = !sh.noDone && !sh.concurrent
	sh.grow(len(pickers) - 1)
	return sh
}

// grow makes room for member i; the caller holds the strategy exclusively.
func (sh *shared) grow(i int) {
	for len(sh.pickers) <= i {
		sh.pickers = append(sh.pickers, nil)
	}
	for len(sh.inflight) <= i {
		sh.inflight = append(sh.inflight, 0)
		sh.draining = append(sh.draining, false)
	}
}

// retire takes removed member i's picker out and forgets it when no Done
// can come for it any more, else marks it draining; the caller holds the
// strategy exclusively.
func (sh *shared) retire(i int) {
	sh.pickers[i] = nil
	switch {
	case sh.noDone, sh.counted && sh.inflight[i] == 0:
		sh.forget(i)
	case sh.counted:
		sh.draining[i] = true
	}
}

func (sh *shared) forget(i int) {
	if f, ok := sh.s.(strategies.Forgetter); ok {
		_ = f.Forget(i) // i is removed, so this succeeds; if not, its index is just not reused
	}
}

// report passes a finished call to the strategy, and forgets its member if
// it was the last call of a removed one; the caller holds mu.
func (sh *shared) report(i int, elapsed time.Duration) {
	sh.s.Done(i, elapsed)
	if !sh.counted || i < 0 || i >= len(sh.inflight) {
		return
	}
	if sh.inflight[i]--; sh.inflight[i] == 0 && sh.draining[i] {
		sh.draining[i] = false
		sh.forget(i)
	}
}

// yields bounds how often lock gives up its P before it parks. A holder
// keeps mu for tens of nanoseconds, but once callers park, every Unlock
// wakes one and the channel runs at the pace of goroutine wake-ups (a
// convoy): 0.5-0.8 µs a call from 8 or 64 goroutines on 2 cores, against
// 0.1-0.3 µs when waiters yield and retry instead (BenchmarkPickVsGRPC,
// interleaved, docs/beyond.md). Parking stays the fallback so that a holder
// descheduled by the OS does not leave waiters spinning through its
// timeslice. Combining (the holder running every waiting pick, waiters
// spinning on their own call) measured no better: 336 against 304 ns at 64
// goroutines for least-requests, 7 interleaved rounds, 2026-12-01.
const yields = 32

// exclusive takes the strategy for a membership change: no Pick or Done
// runs until unlockAll.
func (sh *shared) exclusive() {
	sh.lock()
	if sh.concurrent {
		sh.rw.Lock()
	}
}

func (sh *shared) unlockAll() {
	if sh.concurrent {
		sh.rw.Unlock()
	}
	sh.mu.Unlock()
}

// use takes the strategy for one Pick or Done: shared with the others when
// it is concurrent, else mu (see lock).
func (sh *shared) use() {
	if sh.concurrent {
		sh.rw.RLock()
		return
	}
	sh.lock()
}

func (sh *shared) unuse() {
	if sh.concurrent {
		sh.rw.RUnlock()
		return
	}
	sh.mu.Unlock()
}

// lock takes mu and reports the Done calls owed to the strategy.
func (sh *shared) lock() {
	for range yields {
		if sh.mu.TryLock() {
			sh.settle()
			return
		}
		runtime.Gosched()
	}
	sh.mu.Lock()
	sh.settle()
}

// settle reports the owed Done calls; mu is held.
func (sh *shared) settle() {
	for c := sh.owed.Swap(nil); c != nil; {
		next := c.next
		sh.report(c.i, c.elapsed)
		c.release()
		c = next
	}
}

// done reports a finished call to the strategy.
func (sh *shared) done(i int, elapsed time.Duration) {
	switch {
	case sh.noDone:
	case sh.concurrent:
		sh.rw.RLock()
		sh.s.Done(i, elapsed)
		sh.rw.RUnlock()
	default:
		sh.lock()
		sh.report(i, elapsed)
		sh.mu.Unlock()
	}
}

// picker is the policy's balancer.Picker. It never blocks beyond mu.
type picker struct {
	sh        *shared
	keyHeader string
}

var _ balancer.Picker = (*picker)(nil)

// Pick asks the strategy for a member (which counts the call pending on it)
// and delegates to that member's pick_first picker. The result's Done
// reports completion and latency back to the strategy, whatever the call's
// status, as grpc-go's least_request (gRFC A48) does.
func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	key := routingKey(info.Ctx, p.keyHeader)
	sh := p.sh
	sh.use()
	i := sh.s.Pick(key)
	var child balancer.Picker
	if i >= 0 && i < len(sh.pickers) {
		child = sh.pickers[i]
		if sh.counted {
			sh.inflight[i]++ // reported by this call's Done, or below
		}
	}
	sh.unuse()
	if child == nil {
		// A strategy returning a removed member is a bug in it; fail the
		// call with a message rather than panic in gRPC's picker loop.
		sh.done(i, 0)
		return balancer.PickResult{}, fmt.Errorf("grpcbalancer: strategy picked member %d, which is not ready", i)
	}
	if sh.noDone {
		return child.Pick(info) // nothing to report: the child's result, its Done included
	}
	var start time.Time
	if sh.timed {
		start = time.Now()
	}
	res, err := child.Pick(info)
	if err != nil {
		// The call did not go out (the child is changing state, gRPC will
		// retry the pick with the next picker): uncount it.
		sh.done(i, since(sh.timed, start))
		return res, err
	}
	c := newCall()
	c.sh, c.i, c.start, c.child = sh, i, start, res.Done
	c.live.Store(true)
	res.Done = c.doneFn
	return res, nil
}

func since(timed bool, start time.Time) time.Duration {
	if !timed {
		return 0
	}
	return time.Since(start)
}

// call carries a picked call to its Done without a closure per call (which
// cost 64 B): the object is pooled, and doneFn, the method value of done,
// is bound once when the object is made. It returns to the pool only after
// its Done has been reported to the strategy, so it cannot serve another
// call first.
type call struct {
	sh      *shared
	i       int
	start   time.Time
	elapsed time.Duration
	child   func(balancer.DoneInfo)
	next    *call // on sh.owed
	live    atomic.Bool
	doneFn  func(balancer.DoneInfo)
}

// callPool has no New: done refers to the pool, so New would make an
// initialization cycle; newCall does its work.
var callPool sync.Pool

func newCall() *call {
	if c, ok := callPool.Get().(*call); ok {
		return c
	}
	c := &call{}
	c.doneFn = c.done
	return c
}

func (c *call) release() {
	c.sh, c.child, c.next = nil, nil, nil // hold nothing alive from the pool
	callPool.Put(c)
}

// done reports the call once. gRPC calls Done once per pick; should it ever
// call one twice, the flag makes the second a no-op, or, if the object
// already serves a later call, ends that one early and its own Done is then
// the no-op: either way each Pick is matched by exactly one Strategy.Done,
// so the pending counts stay balanced.
func (c *call) done(di balancer.DoneInfo) {
	if !c.live.CompareAndSwap(true, false) {
		return
	}
	sh, child := c.sh, c.child
	c.elapsed = since(sh.timed, c.start)
	if sh.concurrent {
		sh.rw.RLock()
		sh.s.Done(c.i, c.elapsed)
		sh.rw.RUnlock()
		c.release()
	} else if sh.mu.TryLock() {
		sh.settle()
		sh.report(c.i, c.elapsed)
		sh.mu.Unlock()
		c.release()
	} else {
		// From the push on, the holder may report and recycle c at once:
		// nothing of c is read after it.
		for {
			head := sh.owed.Load()
			c.next = head
			if sh.owed.CompareAndSwap(head, c) {
				break
			}
		}
	}
	if child != nil {
		child(di)
	}
}
