package balancerview

// Sampling reports whether the sampling goroutine runs, and how many
// times one was started.
func (v *View) Sampling() (running bool, starts int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.running, v.starts
}

// Seq is the number of name's latest sample, read without polling.
func (v *View) Seq(name string) int64 {
	v.mu.Lock()
	e := v.entries[name]
	v.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seq
}
