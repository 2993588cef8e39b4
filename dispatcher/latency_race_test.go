//go:build race

package dispatcher_test

// raceEnabled: under the race detector sync.Pool drops a share of what is
// put back, so an allocation count says nothing about the dispatcher.
const raceEnabled = true
