package dispatcher

import (
	"errors"
	"fmt"
)

// Sentinel errors. Test them with errors.Is.
var (
	// ErrClosed: the dispatcher is closed (or closing) and takes no request.
	ErrClosed = errors.New("dispatcher: closed")
	// ErrBusy: TrySubmit found no room.
	ErrBusy = errors.New("dispatcher: busy")
	// ErrNilTask: the task function is nil.
	ErrNilTask = errors.New("dispatcher: nil task")
	// ErrNilContext: the context is nil.
	ErrNilContext = errors.New("dispatcher: nil context")
	// ErrBadOption: an option is out of range or contradicts another, or an
	// argument of a runtime call (AddWorker, RemoveWorker, SetWeight) is
	// refused by the strategy; the strategy's own error is wrapped too.
	ErrBadOption = errors.New("dispatcher: bad option")
	// ErrWrongEngine: an option applies only to the other engine (for
	// example WithCompletionBuffer with the rings engine). New's error
	// matches both it and ErrBadOption.
	ErrWrongEngine = errors.New("dispatcher: option needs the other engine")
	// ErrWrongSchedule: a request or group option applies only under
	// another schedule (a priority under FIFO, a Share outside Fair).
	// The error matches both it and ErrBadOption.
	ErrWrongSchedule = errors.New("dispatcher: option needs another schedule")
	// ErrDeadlineUnmeetable: with WithDeadlineAdmission, a request whose
	// deadline falls before the time the work queued ahead of it is
	// estimated to take is refused at submit. The error matches both it
	// and context.DeadlineExceeded.
	ErrDeadlineUnmeetable = errors.New("dispatcher: deadline cannot be met")
	// ErrNotStarted: the Dispatcher was not made by New (a zero value or a
	// nil pointer); every method returns it instead of panicking or hanging.
	ErrNotStarted = errors.New("dispatcher: not made by New")
	// ErrNoWorker: the index names no live worker.
	ErrNoWorker = errors.New("dispatcher: no such worker")
	// ErrNotDynamic: the strategy does not support membership changes.
	ErrNotDynamic = errors.New("dispatcher: strategy does not support membership changes")
	// ErrBadPick: the strategy picked an index that is not a live worker. The
	// request is answered with this error instead of being lost.
	ErrBadPick = errors.New("dispatcher: strategy picked no live worker")
	// ErrTaskPanicked: the task panicked; the error is a *PanicError.
	ErrTaskPanicked = errors.New("dispatcher: task panicked")
	// ErrTaskExited: the task called runtime.Goexit; its worker was replaced.
	ErrTaskExited = errors.New("dispatcher: task called runtime.Goexit")
)

// PanicError is the error of a task that panicked: the panic's value and
// the stack of the worker goroutine at the panic. It matches
// ErrTaskPanicked with errors.Is.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("dispatcher: task panicked: %v", e.Value)
}

// Is makes errors.Is(err, ErrTaskPanicked) true.
func (e *PanicError) Is(target error) bool { return target == ErrTaskPanicked }

// Unwrap exposes a panic value that is itself an error.
func (e *PanicError) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}
