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
// ByPriority, one per tenant under ByDeadline; a tenant is a Group, or
// a Map run, or the default one), shared among the lanes holding
// requests:
//
//	part(l) = max(1, ⌊cap · w(l) / W⌋),  W = Σ w over the lanes holding requests and l
//
// A request is admitted when the buffer has room, as under FIFO, or when
// another lane holds requests and its own holds fewer than its part: a
// tenant that arrives beside a flooder gets in at once, without waiting
// for the flooder's backlog to drain. The second way in is bounded by a
// second buffer (in all 2·cap accepted at most), so memory stays bounded
// by the buffer whatever the number of lanes. A newcomer does not take
// its lane's room past a submitter of the same lane already in line; the
// balancer offers room to those in line whose lanes have it, first in
// line first, whenever room may have come back (a request left a lane or
// the buffer, a waiter left the line) and before it parks, ahead of those
// in front of them whose lanes are full.

// lane is one flow's part of the intake: a tenant's or a priority
// class's. held is written by submitters under the intake's lock (admit)
// and by the balancer (a request leaving the schedule), so it is atomic;
// the rest is under the intake's lock.
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
// class prio, with its weight, or nil when lanes are off. A lane is a
// tenant's, not a name's: Fair shares among groups, and every group
// without a Tenant name has the same one.
func (b *tenantBook) laneOf(mode laneMode, t *tenant, prio uint8) (*lane, int) {
	switch mode {
	case lanesByTenant:
		if t == nil {
			t = b.def
		}
		return &t.lane, t.share
	case lanesByClass:
		return &b.classLanes[prio], 1 << prio
	}
	return nil, 0
}

// weights drops from the list the lanes that hold nothing and have nobody
// in line, and returns the others' summed weight and their number. Called
// with mu held.
func (in *intake) weights() (sum, n int) {
	keep := in.lanes[:0]
	for _, x := range in.lanes {
		if x.held.Load() == 0 && x.waiting == 0 && x.offered == 0 {
			x.active = false // holds nothing: its weight no longer counts
			continue
		}
		keep = append(keep, x)
		sum += x.weight
	}
	clear(in.lanes[len(keep):])
	in.lanes = keep
	return sum, len(keep)
}

// partOf is a lane's part of the buffer, of weight w among lanes weighing
// sum in all (its own included).
func (in *intake) partOf(w, sum int) int {
	return max(1, int(int64(in.cap)*int64(w)/int64(max(sum, 1))))
}

// laneAdmits reports whether a request of lane l (weight w) may come in
// beyond a full buffer: the second buffer has room, another lane holds
// requests (alone, l's part is the buffer itself), l holds less than its
// part counting room offered to its line, and, for a newcomer, nobody of
// l waits in line already. Called with mu held.
func (in *intake) laneAdmits(l *lane, w int, newcomer bool) bool {
	if in.n+in.offered >= 2*in.cap || newcomer && l.waiting > 0 {
		return false
	}
	sum, n := in.weights()
	if l.active {
		sum, n = sum-l.weight, n-1
	}
	return n > 0 && int(l.held.Load())+l.offered < in.partOf(w, sum+w)
}

// enter counts an admitted request in lane l. Called with mu held.
func (in *intake) enter(l *lane, w int) {
	l.weight = w
	l.held.Add(1)
	in.activate(l)
}

// activate puts l in the list of lanes whose weight counts.
func (in *intake) activate(l *lane) {
	if !l.active {
		l.active = true
		in.lanes = append(in.lanes, l)
	}
}

// leave is the balancer's side: a request of lane l left the schedule. The
// intake looks at its line at the balancer's next offer (offerLanes); the
// flag is set whether or not anyone waits now, since a submitter may be
// on its way into the line with the count it read before this.
func (in *intake) leave(l *lane) {
	l.held.Add(-1)
	if !in.laneDue.Load() {
		in.laneDue.Store(true)
	}
}

// offerLanes offers room to the submitters in line whose lanes have room,
// first in line first, when room may have come back since the last look
// (laneDue) or when force (the balancer is about to park: nothing it does
// later would look). One pass over the line; each lane's part is worked
// out once. Called with mu held, by the balancer.
func (in *intake) offerLanes(force bool) {
	if !in.laneDue.Load() && !force {
		return
	}
	in.laneDue.Store(false)
	if in.waitq.lanes.Load() == 0 {
		return
	}
	sum, n := in.weights()
	if n < 2 {
		return // a lane alone has the buffer, which offer hands out
	}
	in.waitq.wakeIf(func(l *lane) (wake, more bool) {
		if in.n+in.offered >= 2*in.cap {
			return false, false
		}
		if l == nil || int(l.held.Load())+l.offered >= in.partOf(l.weight, sum) {
			return false, true
		}
		in.offered++
		return true, true
	})
}
