//go:build !unix

package benchmarks

import "time"

// cpuTime is not measured here: the cpu-ns/op metric is left out.
func cpuTime() time.Duration { return 0 }
