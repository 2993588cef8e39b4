package httpbalancer_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The tests start HTTP servers and clients; every goroutine they start must
// be gone when they return.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
