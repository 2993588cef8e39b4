package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// -picks stops on an interrupt (it used to run to the end) and prints the
// partial trace, marked, in text and JSON, and its plot.
func TestPicksInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the trace stops after its first batch of picks
	code, out, errs := runCtx(t, ctx, "-picks", "10000000", "-json")
	require.Equal(t, exitInterrupted, code, errs)
	assert.Equal(t, "balancer: interrupted; the report above is partial\n", errs)
	var tr Trace
	require.NoError(t, json.Unmarshal([]byte(out), &tr))
	assert.True(t, tr.Interrupted)
	assert.Len(t, tr.Picks, pickCheck)
	sum := 0
	for _, n := range tr.Counts {
		sum += n
	}
	assert.Equal(t, pickCheck, sum)

	path := filepath.Join(t.TempDir(), "picks.png")
	code, out, errs = runCtx(t, ctx, "-picks", "10000000", "-plot", path)
	require.Equal(t, exitInterrupted, code, errs)
	assert.Contains(t, out, "INTERRUPTED after 4096 of 10000000 picks: partial trace\n")
	assert.Contains(t, out, "over 4096 picks")
	assert.Contains(t, out, "plot of the partial run written to "+path)
	decodePNG(t, path)
}

// An interrupted run writes the plot of what it did; interrupted before
// any pick, it writes nothing and says so. No temporary file is left.
func TestPlotInterrupt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "partial.png")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	defer cancel()
	code, out, errs := runCtx(t, ctx, "-requests", "1000000000", "-requesters", "8", "-workers", "4", "-work", "50us", "-plot", path)
	require.Equal(t, exitInterrupted, code, errs)
	assert.Contains(t, out, "INTERRUPTED after")
	assert.Contains(t, out, "\nplot of the partial run written to "+path+"\n")
	decodePNG(t, path)

	none := filepath.Join(dir, "none.png")
	code, _, errs = runCtx(t, ctx, "-requests", "1000", "-plot", none, "-json")
	require.Equal(t, exitInterrupted, code, errs)
	assert.Contains(t, errs, "balancer: no pick was made: no plot written to "+none+"\n")
	assert.NoFileExists(t, none)

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, "partial.png", entries[0].Name())
}

func decodePNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = png.Decode(f)
	require.NoError(t, err)
}

// The interrupted JSON of -compare and of -rounds says so; -rounds with no
// complete round prints nothing and says that (TestRoundsInterrupt).
func TestInterruptedMarks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	defer cancel()
	code, out, errs := runCtx(t, ctx, "-requests", "1000000000", "-requesters", "8", "-workers", "4", "-work", "50us",
		"-compare", "round-robin,p2c", "-json")
	require.Equal(t, exitInterrupted, code, errs)
	var reports []Report
	require.NoError(t, json.Unmarshal([]byte(out), &reports))
	require.Len(t, reports, 1, "the comparison ends with the interrupted run")
	assert.True(t, reports[0].Interrupted)
	assert.Equal(t, 1_000_000_000, reports[0].Requests)
}

// The real thing in a child process: main's signal handling, SIGINT
// while a -json run is under way. The child re-runs this test binary with
// the demo's arguments in an environment variable.
func TestSIGINTChild(t *testing.T) {
	if args := os.Getenv("BALANCER_CHILD_ARGS"); args != "" {
		os.Args = append([]string{"balancer"}, strings.Fields(args)...)
		main() // exits
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSIGINTChild$")
	cmd.Env = append(os.Environ(), "BALANCER_CHILD_ARGS=-requests 1000000000 -requesters 8 -workers 4 -work 50us -json -v")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string, 1)
	rest := make(chan string, 1)
	go func() {
		br := bufio.NewReader(stderr)
		l, _ := br.ReadString('\n') // -v's first load line: the run is under way
		lines <- l
		b, _ := io.ReadAll(br)
		rest <- string(b)
	}()
	select {
	case <-lines:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the child printed no load line")
	}
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	tail := <-rest
	err = cmd.Wait()
	assert.Less(t, time.Since(start), 5*time.Second)
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "%v", err)
	require.Equal(t, exitInterrupted, ee.ExitCode(), tail)
	assert.Contains(t, tail, "balancer: interrupted; the report above is partial\n")
	var r Report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &r), stdout.String())
	assert.True(t, r.Interrupted)
	assert.Equal(t, 1_000_000_000, r.Requests)
	assert.Less(t, r.Completed+r.Errors, r.Requests)
}
