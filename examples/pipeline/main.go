// Command pipeline runs two dispatchers as the stages of a pipeline: the
// first parses text records, the second counts the primes below each
// parsed value. The second stage has short queues, so when it falls behind
// the first stage's workers wait to hand it work, and then so does the
// reader (backpressure end to end). The first failure in either stage
// cancels the whole pipeline. The result is checked against a serial run.
//
//	go run ./examples/pipeline -records 2000 -max 50000
//	go run ./examples/pipeline -bad 700    # record 700 is malformed
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gobalancer/balancer/dispatcher"
)

func main() {
	records := flag.Int("records", 2000, "number of records")
	maxValue := flag.Int("max", 50000, "largest value in a record")
	bad := flag.Int("bad", -1, "index of a malformed record (-1: none)")
	workers := flag.Int("workers", runtime.GOMAXPROCS(0), "workers per stage")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	recs := Generate(*records, *maxValue, *bad)
	start := time.Now()
	want, err := Serial(recs)
	serial := time.Since(start)
	start = time.Now()
	rep, perr := Run(ctx, recs, Config{Parsers: *workers, Counters: *workers})
	parallel := time.Since(start)
	fmt.Printf("parsed %d, counted %d of %d records in %v (serial %v)\n",
		rep.Parsed, rep.Counted, len(recs), parallel.Round(time.Millisecond), serial.Round(time.Millisecond))
	switch {
	case perr != nil:
		fmt.Fprintln(os.Stderr, "pipeline:", perr)
		os.Exit(1)
	case err != nil:
		fmt.Fprintln(os.Stderr, "pipeline succeeded where the serial run failed:", err)
		os.Exit(1)
	case !slices.Equal(rep.Counts, want):
		fmt.Fprintln(os.Stderr, "pipeline: counts differ from the serial run")
		os.Exit(1)
	}
	fmt.Println("counts equal the serial run's")
}

// ErrBadRecord: a record is not "id value" with a non-negative value.
var ErrBadRecord = errors.New("malformed record")

// ErrTooLarge: a value is past MaxValue, which stage 2 refuses.
var ErrTooLarge = errors.New("value too large")

// MaxValue is the largest value stage 2 counts primes below.
const MaxValue = 1 << 20

// Generate returns n records "id value" with values below maxValue; the
// record at index bad (if any) is malformed.
func Generate(n, maxValue, bad int) []string {
	rng := rand.New(rand.NewPCG(3, 4))
	recs := make([]string, n)
	for i := range recs {
		recs[i] = fmt.Sprintf("%d %d", i, rng.IntN(max(1, maxValue)))
	}
	if bad >= 0 && bad < n {
		recs[bad] = fmt.Sprintf("%d seven", bad)
	}
	return recs
}

// Config sizes the two stages.
type Config struct {
	Parsers, Counters int
}

// Report is what Run did: the prime counts in record order, and how many
// tasks of each stage ran (fewer than the records once a failure
// cancelled the pipeline).
type Report struct {
	Counts          []int
	Parsed, Counted int
}

// counted is a stage-2 answer: the record it belongs to and its count.
type counted struct {
	index, primes int
}

// Run parses the records on one dispatcher and counts primes on another.
// It returns the first failure of either stage, which cancels the rest.
func Run(ctx context.Context, recs []string, c Config) (Report, error) {
	var rep Report
	parsers, err := dispatcher.New(dispatcher.WithWorkers(c.Parsers))
	if err != nil {
		return rep, err
	}
	defer parsers.Close(context.Background())
	// Short queues in the expensive stage: what it cannot take yet waits
	// at stage 1 instead of piling up here.
	counters, err := dispatcher.New(dispatcher.WithWorkers(c.Counters),
		dispatcher.WithWorkerBuffer(1), dispatcher.WithIntakeBuffer(c.Counters))
	if err != nil {
		return rep, err
	}
	defer counters.Close(context.Background())

	// Each group cancels its own stage on its first error; the root spans
	// both, so a failure in either stage cancels both, with itself as the
	// cause.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	fail := func(err error) error { cancel(err); return err }
	var parsed, countedN atomic.Int64

	stage2 := dispatcher.NewGroup[counted](ctx, counters)
	stage1 := dispatcher.NewGroup[struct{}](ctx, parsers)
	for i, rec := range recs {
		err := stage1.Go(func(ctx context.Context) (struct{}, error) {
			parsed.Add(1)
			n, err := parse(rec)
			if err != nil {
				return struct{}{}, fail(fmt.Errorf("record %d: %w", i, err))
			}
			// Blocks while stage 2 is full, until the pipeline is cancelled.
			return struct{}{}, stage2.Go(func(ctx context.Context) (counted, error) {
				countedN.Add(1)
				p, err := primesBelow(ctx, n)
				if err != nil {
					return counted{}, fail(err)
				}
				return counted{i, p}, nil
			})
		})
		if err != nil {
			break // cancelled: the cause is reported below
		}
	}
	_, err1 := stage1.Wait() // every stage-2 submit is made by now
	results, err2 := stage2.Wait()
	rep.Parsed, rep.Counted = int(parsed.Load()), int(countedN.Load())
	if err := context.Cause(ctx); err != nil {
		return rep, err
	}
	if err := errors.Join(err1, err2); err != nil {
		return rep, err
	}
	rep.Counts = make([]int, len(recs))
	for _, r := range results {
		rep.Counts[r.index] = r.primes
	}
	return rep, nil
}

// Serial is Run on the calling goroutine.
func Serial(recs []string) ([]int, error) {
	counts := make([]int, len(recs))
	for i, rec := range recs {
		n, err := parse(rec)
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		if counts[i], err = primesBelow(context.Background(), n); err != nil {
			return nil, err
		}
	}
	return counts, nil
}

func parse(rec string) (int, error) {
	_, v, found := strings.Cut(rec, " ")
	n, err := strconv.Atoi(v)
	if !found || err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %q", ErrBadRecord, rec)
	}
	return n, nil
}

// primesBelow counts primes below n by trial division (deliberately
// costly), giving up when ctx ends.
func primesBelow(ctx context.Context, n int) (int, error) {
	if n > MaxValue {
		return 0, fmt.Errorf("%w: %d", ErrTooLarge, n)
	}
	count := 0
	for k := 2; k < n; k++ {
		if k%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		prime := true
		for d := 2; d*d <= k; d++ {
			if k%d == 0 {
				prime = false
				break
			}
		}
		if prime {
			count++
		}
	}
	return count, nil
}
