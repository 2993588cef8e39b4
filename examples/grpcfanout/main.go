// Command grpcfanout streams items to gRPC backends: dispatcher.Map sends
// each item as a unary call from one of the dispatcher's workers (so the
// workers bound the calls in flight and the window bounds what is read
// ahead), and a gobalancer gRPC policy (contrib/grpcbalancer) picks the
// backend of each call. The backends hash what they receive; the client
// folds the digests in input order, checks them against hashing locally
// and prints the throughput and each backend's share of the calls. One
// backend is slower than the others: under least-pending it gets fewer.
//
//	go run ./examples/grpcfanout -items 10000 -backends 3 -slow 2ms -policy least-pending
package main

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"iter"
	"net"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/gobalancer/balancer/contrib/grpcbalancer"
	"github.com/gobalancer/balancer/dispatcher"
)

// Config is one run.
type Config struct {
	Items    int           // items streamed
	Size     int           // bytes per item
	Backends int           // gRPC servers, on loopback
	Slow     time.Duration // extra time per call on backend 0
	Workers  int           // calls in flight (the dispatcher's workers)
	Policy   string        // the grpcbalancer strategy
}

// Report is what a run measured.
type Report struct {
	Digest  [32]byte       // the digests folded in input order
	Served  map[string]int // calls per backend
	Elapsed time.Duration
}

func main() {
	var c Config
	flag.IntVar(&c.Items, "items", 10000, "items to stream")
	flag.IntVar(&c.Size, "size", 1024, "bytes per item")
	flag.IntVar(&c.Backends, "backends", 3, "gRPC backends")
	flag.DurationVar(&c.Slow, "slow", 2*time.Millisecond, "extra time per call on backend 0")
	flag.IntVar(&c.Workers, "workers", 16, "calls in flight")
	flag.StringVar(&c.Policy, "policy", "least-pending", "grpcbalancer strategy")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "grpcfanout:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c Config) error {
	rep, err := Run(ctx, c)
	if err != nil {
		return err
	}
	if want := Serial(c.Items, c.Size); rep.Digest != want {
		return fmt.Errorf("digest %x differs from the local one %x", rep.Digest, want)
	}
	fmt.Printf("%d items of %d B over %d backends (%s, %d calls in flight) in %v: %.0f items/s, digest %x (equals the local one)\n",
		c.Items, c.Size, c.Backends, c.Policy, c.Workers, rep.Elapsed.Round(time.Millisecond),
		float64(c.Items)/rep.Elapsed.Seconds(), rep.Digest[:8])
	names := make([]string, 0, len(rep.Served))
	for name := range rep.Served {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Printf("  %s served %d\n", name, rep.Served[name])
	}
	return nil
}

// backend hashes what it receives, after its delay.
type backend struct {
	testpb.UnimplementedTestServiceServer
	name  string
	delay time.Duration
}

func (b *backend) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	if b.delay > 0 {
		t := time.NewTimer(b.delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	sum := sha256.Sum256(req.GetPayload().GetBody())
	return &testpb.SimpleResponse{Payload: &testpb.Payload{Body: sum[:]}, Hostname: b.name}, nil
}

// Run starts the backends and a client, streams the items and folds the
// answers. Everything it starts is stopped when it returns.
func Run(ctx context.Context, c Config) (Report, error) {
	if c.Items < 0 || c.Size < 1 || c.Backends < 1 || c.Workers < 1 {
		return Report{}, fmt.Errorf("items must be at least 0, size, backends and workers at least 1")
	}
	var addrs []resolver.Address
	var servers sync.WaitGroup
	defer servers.Wait() // deferred first, so after every server's Stop
	for i := range c.Backends {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return Report{}, err
		}
		srv := grpc.NewServer()
		b := &backend{name: fmt.Sprintf("backend-%d", i)}
		if i == 0 {
			b.delay = c.Slow
		}
		testpb.RegisterTestServiceServer(srv, b)
		servers.Go(func() { _ = srv.Serve(lis) })
		defer srv.Stop()
		addrs = append(addrs, grpcbalancer.AddressWithWeight(resolver.Address{Addr: lis.Addr().String()}, 1))
	}

	r := manual.NewBuilderWithScheme("grpcfanout")
	r.InitialState(resolver.State{Addresses: addrs})
	cc, err := grpc.NewClient("grpcfanout:///backends",
		grpc.WithResolvers(r),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(fmt.Sprintf(`{"loadBalancingConfig":[{%q:{}}]}`, grpcbalancer.PolicyName(c.Policy))))
	if err != nil {
		return Report{}, err
	}
	defer cc.Close()
	client := testpb.NewTestServiceClient(cc)

	d, err := dispatcher.New[*testpb.SimpleResponse](dispatcher.WithWorkers(c.Workers))
	if err != nil {
		return Report{}, err
	}
	defer d.Close(context.Background())

	var pool sync.Pool
	call := func(ctx context.Context, b *[]byte) (*testpb.SimpleResponse, error) {
		resp, err := client.UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: *b}})
		pool.Put(b) // the request is sent: the buffer is free
		return resp, err
	}
	rep := Report{Served: map[string]int{}}
	h := sha256.New()
	start := time.Now()
	for resp, err := range dispatcher.Map(ctx, d, Generate(c.Items, c.Size, &pool), call) {
		if err != nil {
			return Report{}, err
		}
		h.Write(resp.GetPayload().GetBody())
		rep.Served[resp.GetHostname()]++
	}
	rep.Elapsed = time.Since(start)
	h.Sum(rep.Digest[:0])
	return rep, nil
}

// Generate yields items of size bytes, the same on every range, reusing
// the buffers put back in pool.
func Generate(items, size int, pool *sync.Pool) iter.Seq[*[]byte] {
	return func(yield func(*[]byte) bool) {
		x := uint64(1)
		for range items {
			b, _ := pool.Get().(*[]byte)
			if b == nil || len(*b) != size {
				buf := make([]byte, size)
				b = &buf
			}
			for i := range *b {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
				(*b)[i] = byte(x)
			}
			if !yield(b) {
				return
			}
		}
	}
}

// Serial is what Run folds, computed locally.
func Serial(items, size int) [32]byte {
	var pool sync.Pool
	h := sha256.New()
	for b := range Generate(items, size, &pool) {
		sum := sha256.Sum256(*b)
		h.Write(sum[:])
		pool.Put(b)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}
