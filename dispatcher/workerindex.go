package dispatcher

import (
	"context"
	"fmt"
	"reflect"
)

// WithWorkerIndex makes every task's context carry the index of the worker
// that runs it, which the task reads with WorkerIndex: to apply a
// per-worker setting, to use per-worker state without a lock, or to say in
// a log line where it ran. Indices are those of AddWorker, RemoveWorker and
// Stats.Workers.
//
// Cost: the context a task receives wraps the one it was submitted with
// (a 32-byte value: the request itself is recycled, so it cannot be the
// context a task may keep). A worker reuses its last wrapper while it runs
// tasks submitted with the same context, so a batch or a closed loop under
// one context allocates nothing per task; a context per request (one with
// its own deadline, say) costs one allocation per task, and so do tasks of
// several requesters, each with its own long-lived context, that
// interleave on a worker, and contexts passed as struct values. A worker
// keeps the last context it wrapped reachable, when it may reuse it, until
// it runs a task with another or stops (removed, or the dispatcher closed).
// Without this option the task gets its submitted context unchanged and
// nothing is paid.
func WithWorkerIndex() Option {
	return optionFunc(func(c *config) {
		c.given("WithWorkerIndex")
		c.workerIndex = true
	})
}

// WorkerIndex returns the index of the worker running the task whose
// context is ctx, or a context derived from it. It keeps answering after
// the task returned (the context may live on, in a goroutine the task
// started): the worker then runs other tasks, and may have been removed
// (and its index, once it drained, given to a worker added later).
// ok is false, and the index -1, when d was built without WithWorkerIndex,
// for a context no task of d received (that of another dispatcher's task
// included), and for a nil ctx.
func (d *Dispatcher) WorkerIndex(ctx context.Context) (index int, ok bool) {
	if !d.made() || d.idxKey == nil || ctx == nil {
		return -1, false
	}
	w, ok := ctx.Value(d.idxKey).(*workerCtx)
	if !ok {
		return -1, false
	}
	return w.i, true
}

// workerIndexKey is the key of one dispatcher's worker index in a context,
// so that a task of dispatcher A that submits to B with its own context
// does not make B's tasks report A's worker. It is not zero-sized: Go may
// give every pointer to a zero-sized value the same address.
type workerIndexKey struct{ _ byte }

// workerCtx is a task's context under WithWorkerIndex. Immutable once made:
// tasks may keep it, and tasks of one worker may share it.
type workerCtx struct {
	context.Context
	key *workerIndexKey
	i   int
}

func (c *workerCtx) Value(key any) any {
	if k, ok := key.(*workerIndexKey); ok && k == c.key {
		return c
	}
	return c.Context.Value(key)
}

func (c *workerCtx) String() string {
	return fmt.Sprintf("%v.WithWorkerIndex(%d)", c.Context, c.i)
}

// indexer makes one worker's task contexts. Only the goroutine running the
// worker's loop uses it (a replacement goroutine starts after the last
// one stopped).
type indexer struct {
	key  *workerIndexKey
	i    int
	last *workerCtx // the last wrapper made, reused for the same parent
	// reusable: last's parent can be compared with == without a panic and
	// equal means the same context (a pointer, or a comparable zero-size
	// value such as context.Background's). A struct value holding an
	// interface is not: == panics when that holds a slice, say; nor is a
	// zero-size type with a field of an uncomparable type ([0]func()).
	reusable bool
}

// indexer returns worker i's, or nil without WithWorkerIndex.
func (d *Dispatcher) indexer(i int) *indexer {
	if d.idxKey == nil {
		return nil
	}
	return &indexer{key: d.idxKey, i: i}
}

// wrap returns parent carrying x's worker index.
func (x *indexer) wrap(parent context.Context) context.Context {
	// The type words are compared first: a parent of another type is never
	// compared by value, so only last's type has to be safe for ==.
	if x.reusable && parent == x.last.Context {
		return x.last
	}
	w := &workerCtx{Context: parent, key: x.key, i: x.i}
	t := reflect.TypeOf(parent)
	x.reusable = t.Comparable() && (t.Kind() == reflect.Pointer || t.Size() == 0)
	x.last = nil // kept only when it can be reused, so it pins nothing else
	if x.reusable {
		x.last = w
	}
	return w
}
