// Command fanout fans a CPU-bound job out across the balancer's workers:
// it hashes many chunks of a generated buffer with SHA-256, combines the
// digests, checks the result against a serial run and prints the speed-up.
//
//	go run ./examples/fanout -chunks 4096 -size 16384
package main

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/gobalancer/balancer/dispatcher"
)

func main() {
	chunks := flag.Int("chunks", 4096, "number of chunks to hash")
	size := flag.Int("size", 16<<10, "bytes per chunk")
	workers := flag.Int("workers", runtime.GOMAXPROCS(0), "worker goroutines")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *chunks, *size, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "fanout:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, chunks, size, workers int) error {
	if chunks < 1 || size < 1 {
		return fmt.Errorf("chunks and size must be positive")
	}
	buf := make([]byte, chunks*size)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}

	start := time.Now()
	want := Serial(buf, chunks, size)
	serial := time.Since(start)

	start = time.Now()
	got, err := Parallel(ctx, buf, chunks, size, workers)
	if err != nil {
		return err
	}
	parallel := time.Since(start)

	if got != want {
		return fmt.Errorf("parallel digest %x differs from serial %x", got, want)
	}
	fmt.Printf("digest %x (parallel equals serial)\n", got[:8])
	fmt.Printf("serial %v, %d workers %v, speed-up %.2fx\n",
		serial.Round(time.Millisecond), workers, parallel.Round(time.Millisecond), float64(serial)/float64(parallel))
	return nil
}

// Serial hashes every chunk in order and returns the hash of the digests.
func Serial(buf []byte, chunks, size int) [32]byte {
	h := sha256.New()
	for i := range chunks {
		d := sha256.Sum256(buf[i*size : (i+1)*size])
		h.Write(d[:])
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// Parallel hashes the chunks on a dispatcher's workers, one task per
// chunk in one group. The group returns the digests in submission order,
// so the combined result equals Serial's whatever the schedule; the first
// failure (here only a cancellation) cancels the tasks not yet run.
func Parallel(ctx context.Context, buf []byte, chunks, size, workers int) ([32]byte, error) {
	d, err := dispatcher.New[[32]byte](dispatcher.WithWorkers(workers))
	if err != nil {
		return [32]byte{}, err
	}
	defer d.Close(context.Background())

	g := d.Group(ctx)
	for i := range chunks {
		chunk := buf[i*size : (i+1)*size]
		if err := g.Go(func(context.Context) ([32]byte, error) { return sha256.Sum256(chunk), nil }); err != nil {
			break // the group's context ended: Wait reports why
		}
	}
	digests, err := g.Wait()
	if err != nil {
		return [32]byte{}, err
	}
	h := sha256.New()
	for _, digest := range digests {
		h.Write(digest[:])
	}
	var out [32]byte
	h.Sum(out[:0])
	return out, nil
}
