package pool_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/pool"
	"github.com/gobalancer/balancer/worker"
)

// TestChanRemoveThenStop: a pool of channel workers (whose Close
// closes a channel): Remove then Stop closes each worker once, Goexit
// replacements are owned by the pool's Wait, and Replaced counts removed
// workers' replacements too.
func TestChanRemoveThenStop(t *testing.T) {
	done := make(chan worker.Done, 64)
	var ran atomic.Int64
	cfg := worker.Config[int]{
		Depth: 4,
		Run: func(item int, count func()) {
			if item < 0 {
				runtime.Goexit()
			}
			ran.Add(1)
			count()
		},
		Panicked: func(_ int, _ any, _ []byte, count, _ func()) { count() },
		Exited:   func(int) {},
	}
	p := pool.New(3, func(i int, spawn func(func())) *worker.Chan[int] {
		c := cfg
		c.Spawn = spawn
		return worker.NewChan(c, i, done)
	})
	send(p.Worker(1), -1) // Goexit: replaced
	send(p.Worker(1), 5)
	require.NoError(t, p.Remove(1))
	send(p.Worker(0), -1)
	send(p.Worker(2), 7)
	require.NotPanics(t, p.Stop, "Stop after Remove must not close the removed worker again")
	waited := make(chan struct{})
	go func() { p.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("pool.Wait did not return")
	}
	require.Equal(t, int64(2), ran.Load(), "items queued before Remove and Stop run")
	require.Equal(t, int64(2), p.Replaced())
	require.Len(t, done, 4, "one completion message per item, Goexit included")
	for i := range 3 {
		select {
		case <-p.Worker(i).Stopped():
		default:
			t.Fatalf("worker %d not stopped after Wait", i)
		}
	}
}

// send hands w one item as its own run.
func send(w *worker.Chan[int], item int) {
	w.Put(item)
	w.Publish()
}
