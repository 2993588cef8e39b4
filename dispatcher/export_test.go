package dispatcher

import "time"

// SetQueueBudget sets queueBudget until the returned function restores it.
// Tests only, with no dispatcher running.
func SetQueueBudget(d time.Duration) (restore func()) {
	old := queueBudget
	queueBudget = d
	return func() { queueBudget = old }
}
