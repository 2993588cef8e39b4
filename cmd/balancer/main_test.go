package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The demo starts requesters, workers, a monitor and a churner: every test
// must leave none of them behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// small keeps runs short under -race on 2 shared cores.
var small = []string{"-requests", "400", "-requesters", "8", "-workers", "4", "-work", "20us"}

// runArgs runs the binary in-process.
func runArgs(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCtx(t, context.Background(), args...)
}

func runCtx(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// runReport runs with -json and decodes the report.
func runReport(t *testing.T, args ...string) Report {
	t.Helper()
	code, out, errs := runArgs(t, append(args, "-json")...)
	require.Equal(t, exitOK, code, errs)
	var r Report
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	return r
}

func with(extra ...string) []string { return append(append([]string(nil), small...), extra...) }
