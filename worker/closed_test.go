package worker_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClosed: both kinds of worker report Close, which the pool asks
// instead of keeping its own record; a second Close of a channel worker
// (whose first Close closes its channel) is a no-op, not a panic.
func TestClosed(t *testing.T) {
	t.Run("ring", func(t *testing.T) {
		w, wg := newWorker(t, 2, func(int) {})
		require.False(t, w.Closed())
		w.Close()
		require.True(t, w.Closed())
		w.Close()
		wg.Wait()
		require.True(t, w.Closed())
	})
	t.Run("chan", func(t *testing.T) {
		h := newChan(t, 2, 2, func(int) {})
		require.False(t, h.w.Closed())
		h.w.Close()
		require.True(t, h.w.Closed())
		require.NotPanics(t, h.w.Close)
		h.stop(t)
		require.True(t, h.w.Closed())
	})
}
