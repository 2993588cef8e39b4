package dispatcher

import "encoding/json"

// StatsVar is a Dispatcher's Stats as an expvar.Var (it has the one method
// that interface asks for): publish it with
//
//	expvar.Publish("dispatcher", d.StatsVar())
//
// and /debug/vars serves a fresh snapshot as JSON at each read. The
// dispatcher package does not import expvar itself: importing expvar
// registers /debug/vars on http.DefaultServeMux, which every program using
// the dispatcher would then serve without asking for it.
type StatsVar[R any] struct{ d *Dispatcher[R] }

// StatsVar returns d's Stats as an expvar.Var. expvar cannot unpublish: a
// published variable keeps d reachable for the life of the process and
// reports the final snapshot once d is closed.
func (d *Dispatcher[R]) StatsVar() StatsVar[R] { return StatsVar[R]{d: d} }

// String returns the current Stats as JSON.
func (v StatsVar[R]) String() string {
	b, err := json.Marshal(v.d.Stats())
	if err != nil {
		return "{}" // Stats holds numbers, bools and slices of them: never happens
	}
	return string(b)
}
