package grpcbalancer_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobalancer/balancer/contrib/grpcbalancer"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// guard bounds a test: every call uses the returned context, so a hang
// becomes a failed call and the test fails with the guard's message.
func guard(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeoutCause(context.Background(), d,
		fmt.Errorf("%s exceeded its %v guard", t.Name(), d))
	t.Cleanup(cancel)
	return ctx
}

// backend is a loopback gRPC server whose health Check sleeps a fixed
// latency: the stock health service needs no generated code of ours.
type backend struct {
	healthpb.UnimplementedHealthServer
	latency time.Duration
	calls   atomic.Int64
	addr    string
	srv     *grpc.Server
}

func (b *backend) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	b.calls.Add(1)
	t := time.NewTimer(b.latency)
	defer t.Stop()
	select {
	case <-t.C:
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// startBackends starts one server per latency on 127.0.0.1; Cleanup stops them.
func startBackends(t *testing.T, latencies ...time.Duration) []*backend {
	t.Helper()
	var bs []*backend
	for _, l := range latencies {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		b := &backend{latency: l, addr: lis.Addr().String(), srv: grpc.NewServer()}
		healthpb.RegisterHealthServer(b.srv, b)
		served := make(chan struct{})
		go func() { defer close(served); _ = b.srv.Serve(lis) }()
		t.Cleanup(func() { b.srv.Stop(); <-served })
		bs = append(bs, b)
	}
	return bs
}

// dial connects to the backends through a manual resolver that reports
// resolver.State.Addresses with the given weights (nil: no weights).
func dial(t *testing.T, bs []*backend, weights []int, serviceConfig string) *grpc.ClientConn {
	t.Helper()
	r := manual.NewBuilderWithScheme("gobalancer-test")
	var addrs []resolver.Address
	for i, b := range bs {
		a := resolver.Address{Addr: b.addr}
		if weights != nil {
			a = grpcbalancer.AddressWithWeight(a, weights[i])
		}
		addrs = append(addrs, a)
	}
	r.InitialState(resolver.State{Addresses: addrs})
	cc, err := grpc.NewClient(r.Scheme()+":///backends",
		grpc.WithResolvers(r),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(serviceConfig))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// result of a load run.
type result struct {
	ok, failed int64
	errs       []error // the first few failures
}

// load sends calls health checks from conc concurrent callers.
func load(ctx context.Context, cc *grpc.ClientConn, calls, conc int) result {
	client := healthpb.NewHealthClient(cc)
	var (
		next atomic.Int64
		res  result
		mu   sync.Mutex
		wg   sync.WaitGroup
	)
	for range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(calls) {
				_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
				mu.Lock()
				if err != nil {
					res.failed++
					if len(res.errs) < 5 {
						res.errs = append(res.errs, err)
					}
				} else {
					res.ok++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return res
}

// warmUp sends waves of concurrent calls until every backend has answered
// one (its connection is READY), then zeroes the counts, so a measurement
// does not depend on the order in which connections came up.
func warmUp(t *testing.T, ctx context.Context, cc *grpc.ClientConn, bs []*backend) {
	t.Helper()
	for _, b := range bs {
		b.calls.Store(0) // a previous run's calls do not count
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		all := true
		for _, b := range bs {
			all = all && b.calls.Load() > 0
		}
		if all {
			break
		}
		res := load(ctx, cc, 4*len(bs), 4*len(bs))
		require.Zero(t, res.failed, "warm-up calls failed: %v", res.errs)
	}
	for _, b := range bs {
		b.calls.Store(0)
	}
}

func counts(bs []*backend) []int64 {
	c := make([]int64, len(bs))
	for i, b := range bs {
		c[i] = b.calls.Load()
	}
	return c
}

func lbConfig(policy string) string {
	return fmt.Sprintf(`{"loadBalancingConfig":[{%q:{}}]}`, policy)
}
