//go:build !race

package grpcbalancer

const raceEnabled = false
