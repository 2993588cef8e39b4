package balancerview_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: the
// sampler's included.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
