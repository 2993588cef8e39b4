package worker

import "runtime/debug"

// contain runs cfg.Run(item, finish) and answers the item exactly once
// whatever the task does: a panic (also panic(nil), a re-panic in a
// deferred call, a panic inside a Goexit) becomes Panicked, a Goexit
// becomes Exited. After a Goexit the calling goroutine leaves once contain
// returns, even if a panic was recovered on the way; the loop's own
// deferred respawn replaces it. exiting counts the replacement before the
// item is counted and answered, where contain knows of the Goexit.
func contain[T any](cfg *Config[T], item T, finish, exiting func()) {
	normal := false
	defer func() {
		if normal {
			return
		}
		if v := recover(); v != nil {
			stack := debug.Stack()
			cfg.Panicked(item, v, stack, finish, exiting)
			return
		}
		// recover returned nil without a normal return: runtime.Goexit.
		exiting()
		finish()
		cfg.Exited(item)
	}()
	cfg.Run(item, finish)
	normal = true
}
