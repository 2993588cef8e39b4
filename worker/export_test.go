package worker

// Push is Put then Publish, for tests that hand over one item at a time.
func (w *Worker[T]) Push(item T) {
	w.Put(item)
	w.Publish()
}

// Pushed returns how many items were written. Producer only.
func (w *Worker[T]) Pushed() uint64 { return w.put }

// ChanLen returns how many runs wait in w's channel (an item each when
// they were sent with Send).
func ChanLen[T any](w *Chan[T]) int { return len(w.in) }

// Send is Put then Publish: one item, one message.
func (w *Chan[T]) Send(item T) {
	w.Put(item)
	w.Publish()
}
