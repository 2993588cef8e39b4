package grpcbalancer_test

import (
	"testing"
	"time"

	"github.com/gobalancer/balancer/contrib/grpcbalancer"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// TestEndpointsAndMembership drives the policy with a resolver that reports
// only resolver.State.Endpoints (weights in endpoint attributes), then
// changes the membership and the weights: the strategy follows each update.
func TestEndpointsAndMembership(t *testing.T) {
	needStrategy(t, "swrr")
	ctx := guard(t, 20*time.Second)
	bs := startBackends(t, 0, 0, 0)
	ep := func(i, w int) resolver.Endpoint {
		return grpcbalancer.EndpointWithWeight(resolver.Endpoint{Addresses: []resolver.Address{{Addr: bs[i].addr}}}, w)
	}
	r := manual.NewBuilderWithScheme("gobalancer-endpoints")
	r.InitialState(resolver.State{Endpoints: []resolver.Endpoint{ep(0, 3), ep(1, 1)}})
	cc, err := grpc.NewClient(r.Scheme()+":///backends",
		grpc.WithResolvers(r),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(lbConfig(grpcbalancer.PolicyName("swrr"))))
	require.NoError(t, err)
	defer cc.Close()

	warmUp(t, ctx, cc, bs[:2])
	res := load(ctx, cc, 400, 1)
	require.Zero(t, res.failed, "%v", res.errs)
	require.Equal(t, []int64{300, 100, 0}, counts(bs), "weights 3:1 from endpoint attributes")

	// Backend 0 leaves, backend 2 joins, backend 1 is re-weighted.
	r.UpdateState(resolver.State{Endpoints: []resolver.Endpoint{ep(1, 1), ep(2, 1)}})
	warmUp(t, ctx, cc, bs[1:])
	bs[0].calls.Store(0)
	res = load(ctx, cc, 400, 1)
	require.Zero(t, res.failed, "%v", res.errs)
	require.Equal(t, []int64{0, 200, 200}, counts(bs), "after the update")
}
