package grpcbalancer

import (
	"fmt"
	"sync"
	"time"

	"github.com/gobalancer/balancer/strategies"
	"google.golang.org/grpc/balancer"
)

// shared is one strategy and the child picker of each of its members. The
// balancer changes it on membership updates; pickers and Done callbacks use
// it concurrently, so every access holds mu. The critical section is one
// Strategy.Pick or Strategy.Done plus a slice read: see BenchmarkPick.
type shared struct {
	mu      sync.Mutex
	s       strategies.Strategy
	pickers []balancer.Picker // member index -> READY child's picker; nil once removed
}

// done reports a finished call to the strategy.
func (sh *shared) done(i int, elapsed time.Duration) {
	sh.mu.Lock()
	sh.s.Done(i, elapsed)
	sh.mu.Unlock()
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
	sh.mu.Lock()
	i := sh.s.Pick(key)
	var child balancer.Picker
	if i >= 0 && i < len(sh.pickers) {
		child = sh.pickers[i]
	}
	sh.mu.Unlock()
	if child == nil {
		// A strategy returning a removed member is a bug in it; fail the
		// call with a message rather than panic in gRPC's picker loop.
		sh.done(i, 0)
		return balancer.PickResult{}, fmt.Errorf("grpcbalancer: strategy picked member %d, which is not ready", i)
	}
	start := time.Now()
	res, err := child.Pick(info)
	if err != nil {
		// The call did not go out (the child is changing state, gRPC will
		// retry the pick with the next picker): uncount it.
		sh.done(i, time.Since(start))
		return res, err
	}
	childDone := res.Done
	res.Done = func(di balancer.DoneInfo) {
		sh.done(i, time.Since(start))
		if childDone != nil {
			childDone(di)
		}
	}
	return res, nil
}
