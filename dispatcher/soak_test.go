//go:build soak

package dispatcher_test

import (
	"testing"
	"time"
)

// TestSoakExactlyOnce is TestExactlyOnce at full size: 1e6 requests with
// 0–200 µs of CPU each, every fault injected. Run it with
//
//	go test -tags soak -run Soak -timeout 30m -v ./dispatcher/
func TestSoakExactlyOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  faultRun
	}{
		{"completion=unbuffered/strategy=least-pending", faultRun{requests: 500_000, requesters: 64, workers: 8, maxWork: 200 * time.Microsecond, completion: 0, strategy: "least-pending", seed: 11}},
		{"completion=buffered/strategy=round-robin", faultRun{requests: 500_000, requesters: 64, workers: 8, maxWork: 200 * time.Microsecond, completion: 8, strategy: "round-robin", seed: 12}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run.bound = 20 * time.Minute
			rep := runFaults(t, tc.run)
			t.Log(rep)
		})
	}
}
