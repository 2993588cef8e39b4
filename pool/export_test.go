package pool

// Len returns the number of indices handed out, removed workers included.
func (p *Pool[W]) Len() int { return len(p.workers) }
