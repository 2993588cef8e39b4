package grpcbalancer_test

import (
	"context"
	"fmt"
	"net"

	"github.com/gobalancer/balancer/contrib/grpcbalancer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

func ExamplePolicyName() {
	fmt.Println(grpcbalancer.PolicyName("least-pending"))
	fmt.Println(grpcbalancer.PolicyName("consistent-hash"))
	// Output:
	// gobalancer_least_pending
	// gobalancer_consistent_hash
}

// A client that balances over two servers with least-pending, selected by
// service config; the weights travel as resolver address attributes.
func Example() {
	var addrs []resolver.Address
	for range 2 {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Println(err)
			return
		}
		srv := grpc.NewServer()
		healthpb.RegisterHealthServer(srv, health.NewServer())
		go srv.Serve(lis)
		defer srv.Stop()
		addrs = append(addrs, grpcbalancer.AddressWithWeight(resolver.Address{Addr: lis.Addr().String()}, 1))
	}

	r := manual.NewBuilderWithScheme("example")
	r.InitialState(resolver.State{Addresses: addrs})
	cc, err := grpc.NewClient("example:///servers",
		grpc.WithResolvers(r),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"gobalancer_least_pending":{}}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cc.Close()

	resp, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.GetStatus())
	// Output: SERVING
}
