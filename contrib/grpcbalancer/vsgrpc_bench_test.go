package grpcbalancer

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/leastrequest"
	"google.golang.org/grpc/balancer/roundrobin"
)

// vsGRPC are the pickers BenchmarkPickVsGRPC compares, grpc-go's first in
// each group so a run alternates baseline and ours.
var vsGRPC = []struct{ name, policy string }{
	{"grpc_round_robin", roundrobin.Name},
	{"round-robin", PolicyName("round-robin")},
	{"iwrr", PolicyName("iwrr")},
	{"swrr", PolicyName("swrr")},
	{"random", PolicyName("random")},
	{"weighted-random", PolicyName("weighted-random")},
	{"grpc_least_request", leastrequest.Name},
	{"least-requests", PolicyName("least-requests")},
	{"least-pending", PolicyName("least-pending")},
}

// BenchmarkPickVsGRPC measures Pick+Done of the picker a real ClientConn
// receives (capture_test.go), over 8 READY endpoints on 127.0.0.1, from 1,
// 8 and 64 goroutines, against grpc-go's round_robin and least_request
// built the same way. No RPC is sent: only the picker runs. Each
// goroutine count runs every picker in turn, so a slow spell of a shared
// machine hits all of them; repeat the whole run (not -count, which
// repeats each picker back to back) and compare medians.
func BenchmarkPickVsGRPC(b *testing.B) {
	addrs := servers(b, 8)
	pickers := map[string]balancer.Picker{}
	for _, v := range vsGRPC {
		pickers[v.name] = openChannel(b, v.policy, "", addrs, nil).picker()
	}
	procs := runtime.GOMAXPROCS(0)
	for _, g := range []int{1, 8, 64} {
		for _, v := range vsGRPC {
			p := pickers[v.name]
			b.Run(fmt.Sprintf("goroutines=%d/picker=%s", g, v.name), func(b *testing.B) {
				b.ReportAllocs()
				if g == 1 {
					info := balancer.PickInfo{Ctx: context.Background()}
					for b.Loop() {
						pickDone(b, p, info)
					}
					return
				}
				// RunParallel starts parallelism·GOMAXPROCS goroutines.
				b.SetParallelism((g + procs - 1) / procs)
				b.RunParallel(func(pb *testing.PB) {
					info := balancer.PickInfo{Ctx: context.Background()}
					for pb.Next() {
						pickDone(b, p, info)
					}
				})
			})
		}
	}
}

func pickDone(b *testing.B, p balancer.Picker, info balancer.PickInfo) {
	r, err := p.Pick(info)
	if err != nil {
		b.Fatal(err)
	}
	if r.Done != nil {
		r.Done(balancer.DoneInfo{})
	}
}
