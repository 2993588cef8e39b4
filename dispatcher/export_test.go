package dispatcher

// GroupSlots is how many result slots g has allocated: what it holds,
// whichever of them are in use. Tests only.
func GroupSlots[R any](g *Group[R]) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.slots
}
