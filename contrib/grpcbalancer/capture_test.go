package grpcbalancer

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/leastrequest"
	"google.golang.org/grpc/balancer/roundrobin"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/serviceconfig"
)

// The pickers under test and under benchmark are the ones a real
// ClientConn receives: a capture policy wraps the policy of the same name
// behind a ClientConn that records every picker it is sent. Ours and
// grpc-go's are built the same way, over real SubConns to 127.0.0.1, so a
// benchmark compares the pickers and nothing else.
const capturePrefix = "capture_"

var captures sync.Map // policy name -> *capture

type capture struct {
	mu      sync.Mutex
	pickers []balancer.Picker // every picker sent in a READY state
}

func (c *capture) latest() balancer.Picker {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pickers) == 0 {
		return nil
	}
	return c.pickers[len(c.pickers)-1]
}

func (c *capture) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pickers)
}

type captureBuilder struct{ inner string }

func (b captureBuilder) Name() string { return capturePrefix + b.inner }

func (b captureBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	c := &capture{}
	captures.Store(b.inner, c)
	return balancer.Get(b.inner).Build(&captureCC{ClientConn: cc, c: c}, opts)
}

func (b captureBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	if p, ok := balancer.Get(b.inner).(balancer.ConfigParser); ok {
		return p.ParseConfig(js)
	}
	return nil, nil
}

type captureCC struct {
	balancer.ClientConn
	c *capture
}

func (cc *captureCC) UpdateState(s balancer.State) {
	if s.ConnectivityState == connectivity.Ready {
		cc.c.mu.Lock()
		cc.c.pickers = append(cc.c.pickers, s.Picker)
		cc.c.mu.Unlock()
	}
	cc.ClientConn.UpdateState(s)
}

func init() {
	for _, p := range append(Policies(), roundrobin.Name, leastrequest.Name) {
		balancer.Register(captureBuilder{inner: p})
	}
}

// servers starts n health servers on 127.0.0.1; Cleanup stops them.
func servers(tb testing.TB, n int) []string {
	tb.Helper()
	var addrs []string
	for range n {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(tb, err)
		srv := grpc.NewServer()
		healthpb.RegisterHealthServer(srv, health.NewServer())
		served := make(chan struct{})
		go func() { defer close(served); _ = srv.Serve(lis) }()
		tb.Cleanup(func() { srv.Stop(); <-served })
		addrs = append(addrs, lis.Addr().String())
	}
	return addrs
}

// channel is a ClientConn whose policy is captured.
type channel struct {
	cc     *grpc.ClientConn
	r      *manual.Resolver
	policy string
}

func addrState(addrs []string, weights []int) resolver.State {
	var s resolver.State
	for i, a := range addrs {
		ad := resolver.Address{Addr: a}
		if weights != nil {
			ad = AddressWithWeight(ad, weights[i])
		}
		s.Addresses = append(s.Addresses, ad)
	}
	return s
}

// openChannel connects to addrs under policy with its JSON config (config
// "" for {}) and waits until every address is in the picker.
func openChannel(tb testing.TB, policy, config string, addrs []string, weights []int) *channel {
	tb.Helper()
	if config == "" {
		config = "{}"
	}
	r := manual.NewBuilderWithScheme("capture")
	r.InitialState(addrState(addrs, weights))
	sc := fmt.Sprintf(`{"loadBalancingConfig":[{%q:%s}]}`, capturePrefix+policy, config)
	cc, err := grpc.NewClient(r.Scheme()+":///x", grpc.WithResolvers(r),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(sc))
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = cc.Close() })
	cc.Connect()
	ch := &channel{cc: cc, r: r, policy: policy}
	ch.waitFor(tb, len(addrs))
	return ch
}

// waitFor waits until the latest picker reaches n distinct SubConns.
func (ch *channel) waitFor(tb testing.TB, n int) balancer.Picker {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if p := ch.picker(); p != nil && len(pickAll(p, 200*n)) == n {
			return p
		}
		time.Sleep(5 * time.Millisecond)
	}
	require.FailNow(tb, "picker never reached every endpoint", "%s: want %d", ch.policy, n)
	return nil
}

func (ch *channel) picker() balancer.Picker {
	c, ok := captures.Load(ch.policy)
	if !ok {
		return nil
	}
	return c.(*capture).latest()
}

func (ch *channel) pickers() int {
	c, ok := captures.Load(ch.policy)
	if !ok {
		return 0
	}
	return c.(*capture).count()
}

// pickAll counts the SubConns of k picks (each Done called), with routing
// keys 0..k-1 so that the hashing policies reach every endpoint too.
func pickAll(p balancer.Picker, k int) map[balancer.SubConn]int {
	seen := map[balancer.SubConn]int{}
	for key := range k {
		r, err := p.Pick(balancer.PickInfo{Ctx: WithKey(context.Background(), uint64(key))})
		if err != nil {
			continue
		}
		seen[r.SubConn]++
		if r.Done != nil {
			r.Done(balancer.DoneInfo{})
		}
	}
	return seen
}
