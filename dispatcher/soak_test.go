//go:build soak

package dispatcher_test

import (
	"testing"
	"time"

	"github.com/gobalancer/balancer/dispatcher"
)

// TestSoakExactlyOnce is TestExactlyOnce at full size on each engine:
// 500 000 requests per run with 0–200 µs of CPU each, every fault injected.
// Run it with
//
//	go test -tags soak -run Soak -timeout 90m -v ./dispatcher/
func TestSoakExactlyOnce(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		runExactlyOnce(t, eng, faultRun{requests: 500_000, requesters: 64, workers: 8, maxWork: 200 * time.Microsecond, seed: 10, bound: 20 * time.Minute})
	})
}
