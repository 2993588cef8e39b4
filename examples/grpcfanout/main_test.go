package main

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Run starts its backends by running os.Executable, here this test binary,
// in backend mode: the child is a backend and never runs the tests. In the
// test process itself, every goroutine the tests start (gRPC client,
// dispatcher, the reads of the children's output) must be gone when they
// return.
func TestMain(m *testing.M) {
	if os.Getenv(backendEnv) != "" {
		os.Exit(backendMain())
	}
	// Under -race, a process sleeps a second at exit (GORACE's
	// atexit_sleep_ms, 1000 by default) before exiting: the children,
	// which inherit this environment, need not.
	if _, ok := os.LookupEnv("GORACE"); !ok {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	goleak.VerifyTestMain(m)
}

// requireExited: every backend process of rep was started and has exited
// (and was reaped: a signal 0 finds no process).
func requireExited(t *testing.T, bs []Backend) {
	t.Helper()
	for _, b := range bs {
		require.NotZero(t, b.PID, "%s has no process", b.Name)
		p, err := os.FindProcess(b.PID)
		if err != nil {
			continue // no such process
		}
		require.Error(t, p.Signal(syscall.Signal(0)), "%s (pid %d) still runs after Run returned", b.Name, b.PID)
	}
}

// TestRunProcesses: the answers of three backend processes fold to the
// local digest (the stream kept input order end to end), the slow backend
// answers fewer calls than each fast one under least-pending, and every
// backend process has exited when Run returns. The slow one's 50 ms more
// a call is several times a fast call's time even under -race on a loaded
// 2-core machine (about 10 ms there): least-pending keeps as many calls in
// flight on it as on the others, each for several times longer, so it gets
// a fraction of a fast one's calls (about 1/6 there, with two busy loops
// beside the test).
func TestRunProcesses(t *testing.T) {
	c := Config{Items: 600, Size: 64, Backends: 3, Slow: 50 * time.Millisecond, Workers: 8, Policy: "least-pending"}
	rep, err := Run(context.Background(), c)
	require.NoError(t, err)
	requireExited(t, rep.Backends)
	require.Equal(t, Serial(c.Items, c.Size), rep.Digest)
	require.Len(t, rep.Backends, c.Backends)
	pids := map[int]bool{os.Getpid(): true}
	total := 0
	for _, b := range rep.Backends {
		require.False(t, pids[b.PID], "%s's pid %d is not a process of its own", b.Name, b.PID)
		pids[b.PID] = true
		require.NotEmpty(t, b.Addr)
		total += b.Calls
	}
	require.Equal(t, c.Items, total)
	slow := rep.Backends[0]
	require.Equal(t, c.Slow, slow.Delay)
	for _, fast := range rep.Backends[1:] {
		require.Zero(t, fast.Delay)
		require.Less(t, slow.Calls, fast.Calls, "the slow backend got as many calls as a fast one: %+v", rep.Backends)
	}
	t.Logf("calls: %s %d (slow), %s %d, %s %d", slow.Name, slow.Calls,
		rep.Backends[1].Name, rep.Backends[1].Calls, rep.Backends[2].Name, rep.Backends[2].Calls)
}

// TestLocal: the in-process run folds to the same digest.
func TestLocal(t *testing.T) {
	c := Config{Items: 300, Size: 64, Workers: 4}
	got, elapsed, err := Local(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, Serial(c.Items, c.Size), got)
	require.Positive(t, elapsed)
}

// TestRunCancelledMidway: canceling the context mid-stream, with calls in
// flight on a backend that takes a minute a call, ends Run promptly with
// an error, and the backend processes (sent SIGTERM) have exited.
func TestRunCancelledMidway(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		time.Sleep(500 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	rep, err := Run(ctx, Config{Items: 100, Size: 64, Backends: 2, Slow: time.Minute, Workers: 4, Policy: "round-robin"})
	require.Error(t, err)
	require.Less(t, time.Since(start), 10*time.Second)
	requireExited(t, rep.Backends)
}

// TestRunCancelled: a context canceled before Run starts anything ends it
// with its error, no process started.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := Run(ctx, Config{Items: 100, Size: 64, Backends: 2, Workers: 4, Policy: "round-robin"})
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, rep.Backends)
}

func TestRunRejectsBadConfig(t *testing.T) {
	_, err := Run(context.Background(), Config{Items: 1, Size: 0, Backends: 1, Workers: 1, Policy: "round-robin"})
	require.Error(t, err)
	rep, err := Run(context.Background(), Config{Items: 1, Size: 1, Backends: 1, Workers: 1, Policy: "no-such-policy"})
	require.Error(t, err)
	requireExited(t, rep.Backends)
}

func TestRunPrints(t *testing.T) {
	require.NoError(t, run(context.Background(), Config{Items: 200, Size: 32, Backends: 2, Slow: time.Millisecond, Workers: 4, Policy: "round-robin"}))
}
