// Command grpcfanout streams items to gRPC backends that are separate
// processes: dispatcher.Map sends each item as a unary call from one of the
// dispatcher's workers (so the workers bound the calls in flight and the
// window bounds what is read ahead), and a gobalancer gRPC policy
// (contrib/grpcbalancer) picks the backend of each call; grpc-go carries
// the calls, nothing on the wire is home-made.
//
// The command starts its backends itself: it runs its own executable again
// once per backend, in backend mode (the environment variable
// GRPCFANOUT_BACKEND names the backend), each child listens on
// 127.0.0.1:0 and writes its address as the first line of its standard
// output, and a manual resolver gives those addresses to the client. The
// children hash what they receive; one of them (backend-0) waits -slow
// more per call, so under least-pending it gets fewer calls. The client
// folds the digests in input order and checks them against hashing
// locally. Then the same items go through dispatcher.Map again with the
// hashing as the task, on as many workers and without gRPC, and the command
// prints both throughputs, their ratio and each backend's share.
//
// A child stops when its standard input closes (the parent closes it when
// it is done, and the kernel closes it when the parent dies, even killed)
// or on SIGINT or SIGTERM; the parent sends SIGTERM when its context ends
// (its own SIGINT or SIGTERM) and SIGKILL if a child is still running a
// few seconds later. Every child has exited when Run returns.
//
//	go run ./examples/grpcfanout -items 10000 -backends 3 -slow 2ms -policy least-pending
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/gobalancer/balancer/contrib/grpcbalancer"
	"github.com/gobalancer/balancer/dispatcher"
)

// The environment of a backend child: its name (which also selects backend
// mode) and its extra time per call.
const (
	backendEnv      = "GRPCFANOUT_BACKEND"
	backendDelayEnv = "GRPCFANOUT_BACKEND_DELAY"
)

// How long a child has to report its address, and to exit once asked to
// (its standard input closed, or SIGTERM) before it is killed.
const (
	startTimeout = 10 * time.Second
	stopTimeout  = 5 * time.Second
)

// Config is one run.
type Config struct {
	Items    int           // items streamed
	Size     int           // bytes per item
	Backends int           // gRPC backend processes, on loopback
	Slow     time.Duration // extra time per call on backend-0
	Workers  int           // calls in flight (the dispatcher's workers)
	Policy   string        // the grpcbalancer strategy
}

// Backend is one backend process of a run.
type Backend struct {
	Name  string
	Addr  string        // where it listened
	PID   int           // its process, exited when Run returns
	Delay time.Duration // its extra time per call
	Calls int           // calls it answered
}

// Report is what a run measured.
type Report struct {
	Digest   [32]byte  // the digests folded in input order
	Backends []Backend // in start order: backend-0 is the slow one
	Elapsed  time.Duration
}

func main() {
	if os.Getenv(backendEnv) != "" {
		os.Exit(backendMain())
	}
	var c Config
	flag.IntVar(&c.Items, "items", 10000, "items to stream")
	flag.IntVar(&c.Size, "size", 1024, "bytes per item")
	flag.IntVar(&c.Backends, "backends", 3, "gRPC backend processes")
	flag.DurationVar(&c.Slow, "slow", 2*time.Millisecond, "extra time per call on backend-0")
	flag.IntVar(&c.Workers, "workers", 16, "calls in flight")
	flag.StringVar(&c.Policy, "policy", "least-pending", "grpcbalancer strategy")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "grpcfanout:", err)
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, c Config) error {
	rep, err := Run(ctx, c)
	if err != nil {
		return err
	}
	want := Serial(c.Items, c.Size)
	if rep.Digest != want {
		return fmt.Errorf("digest %x differs from the local one %x", rep.Digest, want)
	}
	local, localElapsed, err := Local(ctx, c)
	if err != nil {
		return err
	}
	if local != want {
		return fmt.Errorf("the in-process digest %x differs from the serial one %x", local, want)
	}
	remote := float64(c.Items) / rep.Elapsed.Seconds()
	inproc := float64(c.Items) / localElapsed.Seconds()
	fmt.Printf("%d items of %d B, %d in flight; both runs fold to digest %x, as hashing serially does\n",
		c.Items, c.Size, c.Workers, rep.Digest[:8])
	fmt.Printf("  %-52s %10v %9.0f items/s\n",
		fmt.Sprintf("gRPC, %d backend processes, %s:", len(rep.Backends), grpcbalancer.PolicyName(c.Policy)),
		rep.Elapsed.Round(100*time.Microsecond), remote)
	fmt.Printf("  %-52s %10v %9.0f items/s\n", "in-process dispatcher.Map, no gRPC:",
		localElapsed.Round(100*time.Microsecond), inproc)
	fmt.Printf("  gRPC's throughput is %.3f of the in-process one (%.1fx slower)\n", remote/inproc, inproc/remote)
	for _, b := range rep.Backends {
		share := 0.0
		if c.Items > 0 {
			share = 100 * float64(b.Calls) / float64(c.Items)
		}
		fmt.Printf("  %s (pid %d, %s, %v more a call): %6d calls %5.1f%%\n", b.Name, b.PID, b.Addr, b.Delay, b.Calls, share)
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

// backendMain is a backend child: it listens on 127.0.0.1:0, writes its
// address as the first line of its standard output and serves until its
// standard input closes or it gets SIGINT or SIGTERM. It returns the exit
// status.
func backendMain() int {
	b := &backend{name: os.Getenv(backendEnv)}
	if s := os.Getenv(backendDelayEnv); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			fmt.Fprintf(os.Stderr, "grpcfanout %s: %s: %v\n", b.name, backendDelayEnv, err)
			return 2
		}
		b.delay = d
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // EOF: the parent closed it, or died
		stop()
	}()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(os.Stderr, "grpcfanout %s: %v\n", b.name, err)
		return 1
	}
	srv := grpc.NewServer()
	testpb.RegisterTestServiceServer(srv, b)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	if _, err := fmt.Println(lis.Addr()); err != nil {
		srv.Stop()
		return 1
	}
	select {
	case <-ctx.Done():
		srv.Stop()
		<-served
		return 0
	case err := <-served:
		fmt.Fprintf(os.Stderr, "grpcfanout %s: %v\n", b.name, err)
		return 1
	}
}

// child is a started backend process.
type child struct {
	cmd   *exec.Cmd
	stdin io.Closer // closing it asks the child to exit
}

// startBackends starts n backend children, backend-0 with the extra delay
// slow, and returns them with their addresses once each has reported it.
// stop, never nil, closes their standard inputs and waits for them; it
// sends SIGTERM to those still running after stopTimeout, SIGKILL after
// another stopTimeout. Canceling ctx sends them SIGTERM at once. Unless
// ctx was canceled, stop returns the errors of the children that did not
// exit cleanly.
func startBackends(ctx context.Context, n int, slow time.Duration) (bs []Backend, stop func() error, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, func() error { return nil }, err
	}
	pctx, cancel := context.WithCancel(ctx)
	var children []child
	stop = func() error {
		for _, c := range children {
			_ = c.stdin.Close()
		}
		t := time.AfterFunc(stopTimeout, cancel)
		defer t.Stop()
		defer cancel()
		var errs []error
		for i, c := range children {
			if err := c.cmd.Wait(); err != nil && ctx.Err() == nil {
				errs = append(errs, fmt.Errorf("%s: %w", bs[i].Name, err))
			}
		}
		return errors.Join(errs...)
	}
	for i := range n {
		b := Backend{Name: fmt.Sprintf("backend-%d", i)}
		if i == 0 {
			b.Delay = slow
		}
		cmd := exec.CommandContext(pctx, exe)
		cmd.Env = append(os.Environ(), backendEnv+"="+b.Name, backendDelayEnv+"="+b.Delay.String())
		cmd.Stderr = os.Stderr
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = stopTimeout
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return bs, stop, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return bs, stop, err
		}
		if err := cmd.Start(); err != nil {
			return bs, stop, err
		}
		b.PID = cmd.Process.Pid
		bs = append(bs, b)
		children = append(children, child{cmd: cmd, stdin: stdin})
		// The first line is the address; the child writes nothing else
		// there. The read ends when Wait closes the pipe, at the latest.
		line := make(chan string, 1)
		go func() {
			s, _ := bufio.NewReader(stdout).ReadString('\n')
			line <- s
		}()
		t := time.NewTimer(startTimeout)
		select {
		case s := <-line:
			t.Stop()
			addr := strings.TrimSpace(s)
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return bs, stop, fmt.Errorf("%s reported %q, not an address", b.Name, s)
			}
			bs[i].Addr = addr
		case <-t.C:
			return bs, stop, fmt.Errorf("%s reported no address in %v", b.Name, startTimeout)
		case <-ctx.Done():
			t.Stop()
			return bs, stop, ctx.Err()
		}
	}
	return bs, stop, nil
}

// Run starts the backend processes and a client, streams the items and
// folds the answers. Every process it started has exited when it returns;
// on an error, Report.Backends lists those it started.
func Run(ctx context.Context, c Config) (rep Report, err error) {
	if c.Items < 0 || c.Size < 1 || c.Backends < 1 || c.Workers < 1 {
		return Report{}, fmt.Errorf("items must be at least 0, size, backends and workers at least 1")
	}
	bs, stop, err := startBackends(ctx, c.Backends, c.Slow)
	defer func() {
		rep.Backends = bs
		if serr := stop(); err == nil {
			err = serr
		}
	}()
	if err != nil {
		return rep, err
	}

	addrs := make([]resolver.Address, len(bs))
	for i, b := range bs {
		addrs[i] = grpcbalancer.AddressWithWeight(resolver.Address{Addr: b.Addr}, 1)
	}
	r := manual.NewBuilderWithScheme("grpcfanout")
	r.InitialState(resolver.State{Addresses: addrs})
	cc, err := grpc.NewClient("grpcfanout:///backends",
		grpc.WithResolvers(r),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(fmt.Sprintf(`{"loadBalancingConfig":[{%q:{}}]}`, grpcbalancer.PolicyName(c.Policy))))
	if err != nil {
		return rep, err
	}
	defer cc.Close() // before stop: the client goes first
	// Connect before the clock starts, so that the time is the stream's
	// alone. The channel is ready once one backend is; the policy connects
	// to all of them at once, and a backend not ready yet gets no call.
	wctx, wcancel := context.WithTimeout(ctx, startTimeout)
	defer wcancel()
	cc.Connect()
	for s := cc.GetState(); s != connectivity.Ready; s = cc.GetState() {
		if !cc.WaitForStateChange(wctx, s) {
			return rep, fmt.Errorf("connecting to the backends: %w", wctx.Err())
		}
	}
	client := testpb.NewTestServiceClient(cc)

	d, err := dispatcher.New(dispatcher.WithWorkers(c.Workers))
	if err != nil {
		return rep, err
	}
	defer d.Close(context.Background())

	var pool sync.Pool
	call := func(ctx context.Context, b *[]byte) (*testpb.SimpleResponse, error) {
		resp, err := client.UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: *b}})
		pool.Put(b) // the request is sent: the buffer is free
		return resp, err
	}
	index := make(map[string]int, len(bs))
	for i, b := range bs {
		index[b.Name] = i
	}
	h := sha256.New()
	start := time.Now()
	for resp, err := range dispatcher.Map(ctx, d, Generate(c.Items, c.Size, &pool), call) {
		if err != nil {
			return rep, err
		}
		h.Write(resp.GetPayload().GetBody())
		i, ok := index[resp.GetHostname()]
		if !ok {
			return rep, fmt.Errorf("an answer from %q, no backend of this run", resp.GetHostname())
		}
		bs[i].Calls++
	}
	rep.Elapsed = time.Since(start)
	h.Sum(rep.Digest[:0])
	return rep, nil
}

// Local streams the same items through dispatcher.Map on c.Workers
// workers, each task hashing its item in this process (no gRPC), and
// returns the folded digest and the time the stream took.
func Local(ctx context.Context, c Config) ([32]byte, time.Duration, error) {
	var out [32]byte
	if c.Items < 0 || c.Size < 1 || c.Workers < 1 {
		return out, 0, fmt.Errorf("items must be at least 0, size and workers at least 1")
	}
	d, err := dispatcher.New(dispatcher.WithWorkers(c.Workers))
	if err != nil {
		return out, 0, err
	}
	defer d.Close(context.Background())
	var pool sync.Pool
	hash := func(_ context.Context, b *[]byte) ([32]byte, error) {
		sum := sha256.Sum256(*b)
		pool.Put(b)
		return sum, nil
	}
	h := sha256.New()
	start := time.Now()
	for sum, err := range dispatcher.Map(ctx, d, Generate(c.Items, c.Size, &pool), hash) {
		if err != nil {
			return out, 0, err
		}
		h.Write(sum[:])
	}
	elapsed := time.Since(start)
	h.Sum(out[:0])
	return out, elapsed, nil
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
