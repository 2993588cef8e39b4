package dispatcher

import "github.com/gobalancer/balancer/internal/cacheline"

// channels is the channel engine: Pike's topology, with the request
// channel carrying runs. Submitters append to a locked slice (in) and the
// first one after the balancer took the last run sends the slice as one
// message, so requests that arrive while a run is on its way join the
// next one (channels_intake.go). The balancer receives runs and
// completions in one select, sends each worker a run of requests per turn
// on its channel, and every worker reports on the completion channel
// (chanLinks). With WithIntakeBuffer(0) the engine is pike instead:
// Pike's unbuffered channel of single requests.
type channels struct {
	d *Dispatcher
	chanLinks
	runs chan []*request // runs of requests staged in in, one on its way at most

	// The intake, written by submitters per request: the staged run, its
	// count against the buffer and the line of submitters waiting for
	// room. sending, onWay and reuse are guarded by in.mu too.
	_       cacheline.Pad
	in      intake
	sending bool       // a run is on runs (or about to be), not yet received
	onWay   int        // the length of the run on runs
	reuse   []*request // an empty slice for the next staged run, from the balancer
	_       cacheline.Pad

	last []*request // the last run received, emptied: the next reuse. Balancer only.
}

func newChannels(d *Dispatcher, intake, completion int) *channels {
	e := &channels{d: d, chanLinks: newChanLinks(d, completion), runs: make(chan []*request, 1)}
	e.in.cap = intake
	return e
}

// poll takes the completions, then the run on its way if there is one,
// into the schedule, then settles the intake.
func (e *channels) poll() bool {
	took := e.completions()
	select {
	case q := <-e.runs:
		e.receive(q)
		took = true
	default:
	}
	e.settle(false)
	return took
}

// park is Pike's select over the request and completion channels, with
// control calls and lifecycle kicks beside them; before it waits, the
// room there is goes to the line of submitters.
func (e *channels) park() {
	e.settle(true)
	if q, ok := wait(&e.chanLinks, e.runs); ok {
		e.receive(q)
	}
}
