package dispatcher

import "time"

// SetQueueBudget sets queueBudget until the returned function restores it.
// Tests only, with no dispatcher running.
func SetQueueBudget(d time.Duration) (restore func()) {
	old := queueBudget
	queueBudget = d
	return func() { queueBudget = old }
}

// GroupSlots is how many result slots g has allocated: what it holds,
// whichever of them are in use. Tests only.
func GroupSlots[R any](g *Group[R]) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.slots
}
