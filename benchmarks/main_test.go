package benchmarks

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a pool leaves goroutines behind after Close.
// IgnoreCurrent spares the purge and clock goroutines of the default pool
// that ants starts when its package initialises, before any test runs.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreCurrent()) }
