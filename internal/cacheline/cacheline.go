// Package cacheline keeps data that different goroutines write on
// different cache lines, so that a write by one does not take the line
// away from another that reads or writes its neighbour (false sharing).
// It is the one spelling of padding for the dispatcher and its workers.
package cacheline

// Size is the cache line size assumed: 64 bytes, as on amd64 and on the
// common arm64 cores. A larger line costs a little sharing, never
// correctness.
const Size = 64

// Pad separates two groups of fields in a struct. Put one between fields
// that different goroutines write, and one at the end when the struct's
// last group is hot: a full line, whatever the struct's alignment.
type Pad [Size]byte

// Padded holds a value alone on its cache lines, with a line of padding
// before it and after it, so neither a field nor a neighbouring allocation
// shares them. Use it for a word that one goroutine writes often and
// another reads: a per-worker counter or flag.
type Padded[T any] struct {
	_ Pad
	V T
	_ Pad
}
