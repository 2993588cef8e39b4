//go:build !race

package dispatcher_test

const raceEnabled = false
