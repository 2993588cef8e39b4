package dispatcher

import (
	"fmt"

	"github.com/gobalancer/balancer/strategies"
)

// rotation is the swrr strategy as the Fair and ByPriority schedules use
// it: picks, membership changes and the reuse of a removed member's index.
type rotation interface {
	strategies.Dynamic
	strategies.Forgetter
}

// newRotation returns swrr over weights, built by name: its bound (each
// member within 2 of its share after any change) is what the schedules
// promise.
func newRotation(weights []int) (rotation, error) {
	s, err := strategies.New("swrr", weights)
	if err != nil {
		return nil, err
	}
	r, ok := s.(rotation)
	if !ok {
		return nil, fmt.Errorf("dispatcher: swrr is %T, not a Forgetter", s) // every Dynamic strategy forgets: cannot happen
	}
	return r, nil
}

// fairQueue is Fair: a FIFO per tenant, and the swrr strategy over the
// tenants waiting, weighted by their shares, to pick which hands out
// next. The default tenant is swrr's member 0 for good (weight 0 while
// it has nothing waiting); a group's tenant joins when its first request
// arrives and leaves when swrr picks it with nothing waiting, so swrr's
// members are the tenants waiting plus at most those that stopped since
// their last turn, and its bound (each within 2 of its share) holds
// among the tenants waiting.
type fairQueue struct {
	w     rotation
	flows []fairFlow // by swrr member index; t is nil for a free index
	def   *tenant
	defOn bool // the default tenant's weight is positive in w
	n     int
}

type fairFlow struct {
	t *tenant
	q fifo
}

func newFairQueue(book *tenantBook) *fairQueue {
	w, err := newRotation([]int{book.def.share})
	if err != nil {
		panic("dispatcher: the default tenant's share was refused: " + err.Error()) // share 1: cannot happen
	}
	book.def.member = 0
	return &fairQueue{w: w, flows: []fairFlow{{t: book.def}}, def: book.def, defOn: true}
}

func (q *fairQueue) push(r *request) {
	t := r.tenant
	if t == nil {
		t = q.def
	}
	switch {
	case t == q.def:
		q.defaultIn()
	case t.member < 0:
		i, err := q.w.Add(t.share)
		if err != nil {
			// Shares are checked when the group is made; a refusal here
			// would be swrr's size limit: serve it as the default tenant
			// rather than lose it.
			t = q.def
			q.defaultIn()
			break
		}
		for len(q.flows) <= i {
			q.flows = append(q.flows, fairFlow{})
		}
		q.flows[i].t, t.member = t, i
	}
	q.flows[t.member].q.push(r)
	q.n++
}

// defaultIn gives the default tenant its share back if it had none.
func (q *fairQueue) defaultIn() {
	if !q.defOn {
		_ = q.w.SetWeight(0, q.def.share) // raising a weight is never refused
		q.defOn = true
	}
}

func (q *fairQueue) pop() *request {
	if q.n == 0 {
		return nil
	}
	for {
		i := q.w.Pick(0)
		f := &q.flows[i]
		if r := f.q.pop(); r != nil {
			q.n--
			return r
		}
		// Nothing waiting: out of the share. Never the last positive
		// weight, since a tenant waiting has one.
		if i == 0 {
			if q.w.SetWeight(0, 0) != nil {
				return q.scan()
			}
			q.defOn = false
			continue
		}
		if q.w.Remove(i) != nil {
			return q.scan()
		}
		// The index may come back with the next tenant to join; swrr
		// refuses only an index that is not removed, which i is.
		_ = q.w.Forget(i)
		f.t.member, f.t, f.q = -1, nil, fifo{}
	}
}

// scan serves the first tenant waiting: unreachable while swrr keeps its
// contract, and never loses a request if it does not.
func (q *fairQueue) scan() *request {
	for i := range q.flows {
		if r := q.flows[i].q.pop(); r != nil {
			q.n--
			return r
		}
	}
	return nil
}

func (q *fairQueue) len() int { return q.n }

func (q *fairQueue) takeAll() []*request {
	var all []*request
	for i := range q.flows {
		all = append(all, q.flows[i].q.takeAll()...)
	}
	q.n = 0
	return all
}
