package cacheline_test

import (
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"

	"github.com/gobalancer/balancer/internal/cacheline"
)

// A padded value starts a line after the struct's start and ends a line
// before its end: nothing else within a line of it on either side.
func TestPaddedIsAlone(t *testing.T) {
	var b cacheline.Padded[atomic.Bool]
	var n cacheline.Padded[uint32]
	var i cacheline.Padded[atomic.Int64]
	assert.Equal(t, uintptr(cacheline.Size), unsafe.Offsetof(b.V))
	assert.Equal(t, uintptr(cacheline.Size), unsafe.Offsetof(n.V))
	assert.Equal(t, uintptr(cacheline.Size), unsafe.Offsetof(i.V))
	assert.GreaterOrEqual(t, unsafe.Sizeof(i)-unsafe.Offsetof(i.V)-unsafe.Sizeof(i.V), uintptr(cacheline.Size))
	assert.GreaterOrEqual(t, unsafe.Sizeof(n)-unsafe.Offsetof(n.V)-unsafe.Sizeof(n.V), uintptr(cacheline.Size))
	assert.Equal(t, uintptr(cacheline.Size), unsafe.Sizeof(cacheline.Pad{}))
}
