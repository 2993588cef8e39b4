package dispatcher

import (
	"fmt"
	"strings"
)

// Schedule selects what runs next: the order in which the balancer hands
// out the requests waiting for a worker. The strategy still decides where
// each one runs; the schedule decides which one goes when a worker has
// room. Every schedule keeps every guarantee (docs/guarantees.md).
type Schedule int

const (
	// FIFO hands requests out in the order the balancer took them.
	FIFO Schedule = iota + 1
	// ByPriority serves classes of priority (Dispatcher.Priority) by
	// weight: class p weighs 2^p, so while classes 7 and 0 both wait,
	// class 7 gets 128 hand-outs for every one of class 0 and no class
	// starves. A request waiting at the head of its class is handed out
	// within 3·W hand-outs, W the summed weight of the classes waiting
	// (at most 3·255 with all eight waiting; 3·129 under one saturating
	// class 7). Within a class, FIFO.
	ByPriority
	// ByDeadline is earliest deadline first, by the submit context's
	// Deadline: requests with a deadline go before those without, which
	// go in FIFO order. Requests with equal deadlines keep FIFO order.
	ByDeadline
	// Fair shares hand-outs among tenants by weight: each Group is a
	// tenant whose weight is its Share (default 1), and requests outside
	// any group form the default tenant (weight 1). While tenants wait,
	// each gets its share of hand-outs within 2 (smooth weighted round
	// robin over the tenants waiting, the swrr strategy's algorithm).
	// Within a tenant, FIFO.
	Fair
)

// DefaultSchedule is the schedule New uses without WithSchedule.
const DefaultSchedule = FIFO

// String returns the schedule's name: "fifo", "priority", "deadline" or
// "fair".
func (s Schedule) String() string {
	switch s {
	case FIFO:
		return "fifo"
	case ByPriority:
		return "priority"
	case ByDeadline:
		return "deadline"
	case Fair:
		return "fair"
	}
	return fmt.Sprintf("Schedule(%d)", int(s))
}

// MarshalText returns the schedule's name; an unknown schedule is an
// error wrapping ErrBadOption.
func (s Schedule) MarshalText() ([]byte, error) {
	if s < FIFO || s > Fair {
		return nil, fmt.Errorf("%w: unknown schedule %d", ErrBadOption, int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText sets s to the schedule named by text ("fifo", "priority",
// "deadline" or "fair", in any case), so flag.TextVar takes a Schedule;
// another name is an error wrapping ErrBadOption, and s is unchanged.
func (s *Schedule) UnmarshalText(text []byte) error {
	for x := FIFO; x <= Fair; x++ {
		if strings.EqualFold(string(text), x.String()) {
			*s = x
			return nil
		}
	}
	return fmt.Errorf("%w: unknown schedule %q (want fifo, priority, deadline or fair)", ErrBadOption, text)
}

// WithSchedule selects the schedule (default DefaultSchedule).
func WithSchedule(s Schedule) Option {
	return optionFunc(func(c *config) {
		c.given("WithSchedule")
		if s < FIFO || s > Fair {
			c.bad("unknown schedule %d (want FIFO, ByPriority, ByDeadline or Fair)", int(s))
			return
		}
		c.schedule = s
	})
}

// scheduler holds the requests the balancer took and has not handed out,
// in the order a schedule gives them. Balancer goroutine only. FIFO's is
// a plain queue: a push and a pop per request, no allocation once grown.
type scheduler interface {
	push(r *request)
	// pop returns the next request to hand out, or nil when none waits.
	pop() *request
	len() int
	// takeAll empties the scheduler (abandon).
	takeAll() []*request
}

func newScheduler(s Schedule, shares *tenantBook) scheduler {
	switch s {
	case ByPriority:
		return newPriorityQueue()
	case ByDeadline:
		return new(deadlineQueue)
	case Fair:
		return newFairQueue(shares)
	}
	return new(fifo)
}

// fifo is a queue of requests: a slice consumed from head, compacted when
// half of it is consumed, so it allocates only to grow.
type fifo struct {
	q    []*request
	head int
}

func (f *fifo) push(r *request) {
	if f.head > 0 && f.head >= len(f.q)/2 {
		n := copy(f.q, f.q[f.head:])
		clear(f.q[n:])
		f.q, f.head = f.q[:n], 0
	}
	f.q = append(f.q, r)
}

func (f *fifo) pop() *request {
	if f.head == len(f.q) {
		return nil
	}
	r := f.q[f.head]
	f.q[f.head] = nil
	f.head++
	if f.head == len(f.q) {
		f.q, f.head = f.q[:0], 0
	}
	return r
}

func (f *fifo) len() int { return len(f.q) - f.head }

func (f *fifo) takeAll() []*request {
	q := append([]*request(nil), f.q[f.head:]...)
	clear(f.q)
	f.q, f.head = f.q[:0], 0
	return q
}
