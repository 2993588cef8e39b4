package dispatcher

import "sync/atomic"

// Admission by the schedule. Under FIFO the intake is one line: a
// submitter that finds the buffer full waits behind every earlier one.
// Under another schedule that line would undo the schedule: a tenant (or a
// priority class) that floods fills the buffer, and every other tenant's
// submit waits for room behind the flooder's, whatever its Share or
// Priority; the schedule only ever sees what got in. So under those
// schedules each flow has a lane, its part of the buffer by the weight the
// schedule gives it (a tenant's Share under Fair, 2^p for class p under
// ByPriority, one per tenant under ByDeadline), shared among the lanes
// holding requests:
//
//	part(l) = max(1, ⌊cap · w(l) / W⌋),  W = Σ w over the lanes holding requests and l
//
// A request is admitted when the buffer has room, as under FIFO, or when
// its lane holds fewer than its part: a tenant that arrives beside a
// flooder gets in at once, without waiting for the flooder's backlog to
// drain. The second way in is bounded by a second buffer (in all 2·cap
// accepted at most), so memory stays bounded by the buffer whatever the
// number of lanes. A submitter whose lane has room waits in line no
// longer: the balancer offers it room as soon as its lane drops below its
// part, ahead of those in front of it whose lanes are full.

// lane is one flow's part of the intake: a tenant's (by name) or a
// priority class's. held is written by submitters under the intake's lock
// (admit) and by the balancer (a request leaving the schedule), so it is
// atomic; the rest is under the intake's lock.
type lane struct {
	held    atomic.Int64 // accepted and not yet handed out (or answered)
	weight  int          // the schedule's weight for it, set at admission
	waiting int          // its submitters in the intake's line
	offered int          // room offered to them and not yet taken
	active  bool         // in the intake's list of lanes holding requests
}

// laneMode says which flows have lanes: none under FIFO (or without a
// buffer), tenants under Fair and ByDeadline, classes under ByPriority.
type laneMode uint8

const (
	lanesOff laneMode = iota
	lanesByTenant
	lanesByClass
)

// lanesFor is the lanes schedule s gives.
func lanesFor(s Schedule) laneMode {
	switch s {
	case ByPriority:
		return lanesByClass
	case Fair, ByDeadline:
		return lanesByTenant
	}
	return lanesOff
}

// laneOf returns the lane of a request of tenant t (nil: the default) and
// class prio, with its weight, or nil when lanes are off.
func (b *tenantBook) laneOf(mode laneMode, t *tenant, prio uint8) (*lane, int) {
	switch mode {
	case lanesByTenant:
		if t == nil {
			t = b.def
		}
		return &t.stats.lane, t.share
	case lanesByClass:
		return &b.classes[prio].lane, 1 << prio
	}
	return nil, 0
}

// bound is the most requests the intake admits: twice its buffer with
// lanes (the second buffer is for lanes under their parts).
func (in *intake[R]) bound(m laneMode) int {
	if m == lanesOff {
		return in.cap
	}
	return 2 * in.cap
}

// part is lane l's part of the buffer now. Called with mu held.
func (in *intake[R]) part(l *lane, w int) int {
	sum := w
	keep := in.lanes[:0]
	for _, x := range in.lanes {
		if x.held.Load() == 0 && x.waiting == 0 && x.offered == 0 {
			x.active = false // holds nothing: its weight no longer counts
			continue
		}
		keep = append(keep, x)
		if x != l {
			sum += x.weight
		}
	}
	clear(in.lanes[len(keep):])
	in.lanes = keep
	return max(1, int(int64(in.cap)*int64(w)/int64(sum)))
}

// laneAdmits reports whether lane l may take one more request beyond a full
// buffer: it holds less than its part, counting room offered to its line,
// and the second buffer has room. Called with mu held.
func (in *intake[R]) laneAdmits(l *lane, w int) bool {
	return in.n+in.offered < 2*in.cap && int(l.held.Load())+l.offered < in.part(l, w)
}

// enter counts an admitted request in lane l. Called with mu held.
func (in *intake[R]) enter(l *lane, w int) {
	l.weight = w
	l.held.Add(1)
	in.activate(l)
}

// activate puts l in the list of lanes whose weight counts.
func (in *intake[R]) activate(l *lane) {
	if !l.active {
		l.active = true
		in.lanes = append(in.lanes, l)
	}
}

// leave is the balancer's side: a request of lane l left the schedule. If
// submitters wait in line for a lane, the intake looks at the line at the
// balancer's next offer (offerLanes).
func (in *intake[R]) leave(l *lane) {
	l.held.Add(-1)
	if in.waitq.lanes.Load() > 0 {
		in.laneDue.Store(true)
	}
}

// offerLanes offers room to the submitters in line whose lanes have room,
// first in line first, when a request left a lane since the last look.
// Called with mu held, by the balancer.
func (in *intake[R]) offerLanes() {
	if !in.laneDue.Load() {
		return
	}
	in.laneDue.Store(false)
	in.waitq.wakeIf(func(l *lane) bool {
		if l == nil || !in.laneAdmits(l, l.weight) {
			return false
		}
		in.offered++
		return true
	})
}
