package strategies

import "github.com/cespare/xxhash/v2"

// StringKey turns a string (a user id, a header value, a path) into the
// routing key that Pick takes, without allocating. Equal strings give equal
// keys, so affinity strategies send them to the same member.
func StringKey(s string) uint64 { return xxhash.Sum64String(s) }
