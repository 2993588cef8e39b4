package balancerview

// Sampling reports whether the sampling goroutine runs, and how many
// times one was started.
func (v *View) Sampling() (running bool, starts int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.running, v.starts
}
