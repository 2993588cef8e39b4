package prommetrics_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The dispatcher and the test's HTTP server start goroutines: none may
// outlive a test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
