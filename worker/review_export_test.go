package worker

// ChanLen returns how many items wait in w's channel (review tests).
func ChanLen[T any](w *Chan[T]) int { return len(w.in) }
