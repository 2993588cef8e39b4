package dispatcher

import "context"

type lineResult struct {
	err  error
	done bool
}

// lineSubmit starts a blocking enqueue of r on either engine and returns
// where its result lands once it returns.
func lineSubmit(e interface {
	enqueue(context.Context, *request, bool) error
}, ctx context.Context, r *request) *lineResult {
	res := &lineResult{}
	go func() {
		res.err = e.enqueue(ctx, r, true)
		res.done = true
	}()
	return res
}
