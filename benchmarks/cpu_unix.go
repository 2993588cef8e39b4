//go:build unix

package benchmarks

import (
	"syscall"
	"time"
)

// cpuTime returns the user plus system CPU time of the whole process. On a
// machine shared with other jobs, CPU per task is steadier than wall time:
// it does not count the time the process waited for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
