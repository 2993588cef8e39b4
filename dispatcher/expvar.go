package dispatcher

import (
	"expvar"
	"fmt"
	"sync"
)

// expvarMu makes "is the name free? then publish" one step for our own
// callers: expvar.Publish panics on a name already taken.
var expvarMu sync.Mutex

// PublishExpvar publishes d's Stats as the expvar variable name, so
// /debug/vars (expvar.Handler, registered on http.DefaultServeMux by the
// expvar package) serves a fresh snapshot as JSON at each read. expvar has
// no way to unpublish: the variable keeps d reachable for the life of the
// process and reports the final snapshot once d is closed, so publish
// long-lived dispatchers. An empty name or one already published is
// refused with an error wrapping ErrBadOption.
func (d *Dispatcher[R]) PublishExpvar(name string) error {
	if !d.made() {
		return ErrNotStarted
	}
	if name == "" {
		return fmt.Errorf("%w: PublishExpvar: empty name", ErrBadOption)
	}
	expvarMu.Lock()
	defer expvarMu.Unlock()
	if expvar.Get(name) != nil {
		return fmt.Errorf("%w: PublishExpvar: expvar %q is already published", ErrBadOption, name)
	}
	expvar.Publish(name, expvar.Func(func() any { return d.Stats() }))
	return nil
}
