// Package benchmarks compares the balancer's dispatcher with other Go worker
// pools. It is a nested module so that the pools it measures never enter the
// main module's go.mod.
package benchmarks
