package dispatcher

import "fmt"

// MaxPriority is the highest priority class; classes are 0 (the default)
// to MaxPriority, and class p weighs 2^p under ByPriority.
const MaxPriority = 7

// priorityQueue is ByPriority: a FIFO per class, and the swrr strategy
// over the classes, weighted 2^p, to pick which class hands out next.
// A class with nothing waiting is given weight 0 when swrr picks it, and
// its weight back when a request arrives; so the classes swrr shares
// among are those waiting, and its bound (each within 2 of its share)
// is the starvation bound the Schedule doc states.
type priorityQueue struct {
	cls [MaxPriority + 1]fifo
	on  [MaxPriority + 1]bool // the class's weight is positive in w
	w   rotation
	n   int
}

func newPriorityQueue() *priorityQueue {
	ws := make([]int, MaxPriority+1)
	q := &priorityQueue{}
	for p := range ws {
		ws[p] = 1 << p
		q.on[p] = true
	}
	w, err := newRotation(ws)
	if err != nil {
		panic(fmt.Sprintf("dispatcher: priority weights refused: %v", err)) // constant weights: cannot happen
	}
	q.w = w
	return q
}

func (q *priorityQueue) push(r *request) {
	p := int(r.prio)
	if !q.on[p] {
		// Raising a weight is never refused (weights below MaxWeight).
		_ = q.w.SetWeight(p, 1<<p)
		q.on[p] = true
	}
	q.cls[p].push(r)
	q.n++
}

func (q *priorityQueue) pop() *request {
	if q.n == 0 {
		return nil
	}
	for range len(q.cls) {
		p := q.w.Pick(0)
		if r := q.cls[p].pop(); r != nil {
			q.n--
			return r
		}
		// Empty: out of the share until a request arrives. Never the last
		// positive weight, since a waiting class has one.
		if q.w.SetWeight(p, 0) != nil {
			break
		}
		q.on[p] = false
	}
	// Unreachable while swrr keeps its contract; never lose a request.
	for p := len(q.cls) - 1; p >= 0; p-- {
		if r := q.cls[p].pop(); r != nil {
			q.n--
			return r
		}
	}
	return nil
}

func (q *priorityQueue) len() int { return q.n }

func (q *priorityQueue) takeAll() []*request {
	var all []*request
	for p := range q.cls {
		all = append(all, q.cls[p].takeAll()...)
	}
	q.n = 0
	return all
}
