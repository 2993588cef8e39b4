package dispatcher

import "fmt"

// GroupOption configures a Group (NewGroup) or a stream (Map): the
// tenant its tasks count under, its share and priority class, how many of
// its tasks may be in flight, and what a failure does.
type GroupOption interface{ applyGroup(*groupConfig) }

type groupConfig struct {
	collect    bool // CollectErrors
	completion bool // CompletionOrder
	limit      int  // Limit; 0 without
	share      int  // Share; 0 without
	prio       int  // Priority
	name       string
	err        error // the first bad option
}

func (c *groupConfig) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

type groupOptionFunc func(*groupConfig)

func (f groupOptionFunc) applyGroup(c *groupConfig) { f(c) }

// groupOptions applies opts; a nil option is a bad one.
func groupOptions(opts []GroupOption) groupConfig {
	var c groupConfig
	for _, o := range opts {
		if o == nil {
			c.fail(fmt.Errorf("%w: nil group option", ErrBadOption))
			continue
		}
		o.applyGroup(&c)
	}
	if c.prio < 0 || c.prio > MaxPriority {
		c.fail(fmt.Errorf("%w: priority class %d out of range [0, %d]", ErrBadOption, c.prio, MaxPriority))
	}
	return c
}

// CollectErrors runs every task whatever the others do, as conc's
// WithErrors: a failure cancels nothing. A Group's Wait returns every
// error, in submission order, joined with errors.Join; a stream yields
// each item's error beside it and goes on.
func CollectErrors() GroupOption {
	return groupOptionFunc(func(c *groupConfig) { c.collect = true })
}

// CompletionOrder makes a Group's Results yield each answer as soon as it
// is in, in the order the tasks finish, instead of in submission order: a
// slow task holds back no answer but its own. Wait is unchanged: its
// slice is in submission order. It is an option of the group, not of the
// range, because the group then has each answered task pushed where
// Results finds it (one compare-and-swap per task on the worker that
// answers, no allocation). A stream yields in input order only: Map
// refuses it with ErrBadOption.
func CompletionOrder() GroupOption {
	return groupOptionFunc(func(c *groupConfig) { c.completion = true })
}

// Limit bounds how many tasks are in flight at once. For a Group, at most
// n of its tasks are accepted and not yet answered (waiting in the
// dispatcher or running), as errgroup's SetLimit does: Go waits for one
// of them to finish (until the group's context ends, or Close begins:
// ErrClosed), and TryGo reports false. For a stream, n is its window: at
// most n items are read from the input and not yet yielded (by default 16
// per live worker, at least 32); 1 runs one item at a time. n must be at
// least 1.
func Limit(n int) GroupOption {
	return groupOptionFunc(func(c *groupConfig) {
		if n < 1 {
			c.fail(fmt.Errorf("%w: limit must be at least 1, got %d", ErrBadOption, n))
			return
		}
		c.limit = n
	})
}

// Share is the weight of the group's or the stream's tenant under the
// Fair schedule (default 1; the default tenant of requests outside groups
// and streams weighs 1), in [1, MaxShare]. It is refused, with
// ErrWrongSchedule, under any other schedule.
func Share(w int) GroupOption {
	return groupOptionFunc(func(c *groupConfig) {
		if w < 1 || w > MaxShare {
			c.fail(fmt.Errorf("%w: share must be in [1, %d], got %d", ErrBadOption, MaxShare, w))
			return
		}
		c.share = w
	})
}

// Priority gives the tasks of the group or the stream priority class p, 0
// (the default) to MaxPriority, which the ByPriority schedule orders by
// (see Dispatcher.Priority); a group's Priority view overrides it per
// task. A class other than 0 needs WithSchedule(ByPriority): under
// another schedule every submit is refused with ErrWrongSchedule.
func Priority(p int) GroupOption {
	return groupOptionFunc(func(c *groupConfig) { c.prio = p })
}

// Tenant names the group or the stream in Stats.Tenants: flows of one
// name add up to one line. Without it a group counts under "group" and a
// stream under "stream". The name is not shown anywhere else.
//
// Tenant("") and Tenant(DefaultTenant) are refused with ErrBadOption: an
// empty name would read as no name, and the default tenant's line is kept
// for the requests outside any group or stream.
func Tenant(name string) GroupOption {
	return groupOptionFunc(func(c *groupConfig) {
		if name == "" || name == DefaultTenant {
			c.fail(fmt.Errorf("%w: tenant name %q is empty or the default tenant's", ErrBadOption, name))
			return
		}
		c.name = name
	})
}
