// Package benchmarks compares the balancer's dispatcher with other Go worker
// pools. It is a nested module so that the pools it measures never enter the
// main module's go.mod.
//
// Every benchmark runs each implementation as a sub-benchmark impl=NAME:
//
//   - balancer: the dispatcher on the rings engine, named explicitly so the
//     figures keep their meaning if the default engine changes.
//   - balancer-channels: the same dispatcher on the channel engine, with its
//     default buffers.
//   - chanpool: the plain pool, N goroutines receiving from one unbuffered
//     channel.
//   - pike: the load balancer of Rob Pike's talk "Concurrency is not
//     parallelism" (2012) as the slides have it, sized so that it cannot
//     deadlock, as the reference both engines are read against.
//   - ants, pond, workerpool, conc, errgroup: those libraries' pools.
//   - goroutine: one goroutine per task.
//
// rounds.sh runs them in interleaved rounds; internal/ratios turns its
// output into the tables of docs/performance.md.
package benchmarks
