package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/sync/errgroup"
	"golang.org/x/term"
)

// Intervals of the live view. Stats goes through the balancer goroutine,
// so sampling is kept to a few hundred calls per second at most.
const (
	plotEvery    = 10 * time.Millisecond  // pending samples for -plot
	verboseEvery = 250 * time.Millisecond // Pike's load lines for -v
	barEvery     = 100 * time.Millisecond // progress bar updates
)

// sample is every worker's pending at one instant; -1 for a removed worker.
type sample struct {
	at      time.Duration
	pending []int
}

// monitor is the live view of a run: the progress bar, -v's load lines and
// the pending samples of -plot, all from one goroutine that owns them.
type monitor struct {
	samples []sample // read after the group's Wait
	// The samples kept are ticks 0, stride, 2·stride, ...: at most
	// 2·maxPoints whatever the run's length, since when full every other
	// one goes and the stride doubles.
	tick, stride int
}

func (m *monitor) keep(s sample) {
	t := m.tick
	m.tick++
	m.stride = max(m.stride, 1)
	if t%m.stride != 0 {
		return
	}
	if len(m.samples) == 2*maxPoints {
		kept := m.samples[:0]
		for k := 0; k < len(m.samples); k += 2 {
			kept = append(kept, m.samples[k])
		}
		m.samples, m.stride = kept, 2*m.stride
		if t%m.stride != 0 {
			return
		}
	}
	m.samples = append(m.samples, s)
}

// startMonitor runs the live view in g until ctx ends, then finishes the
// bar and prints -v's last line. It starts nothing if no view is on.
func startMonitor(ctx context.Context, g *errgroup.Group, d *dispatcher.Dispatcher, c *config, name string, answered *atomic.Int64, stderr io.Writer) *monitor {
	m := &monitor{}
	every := time.Duration(0)
	for _, on := range []struct {
		want bool
		d    time.Duration
	}{{c.plot != "", plotEvery}, {c.verbose, verboseEvery}, {c.progress, barEvery}} {
		if on.want && (every == 0 || on.d < every) {
			every = on.d
		}
	}
	if every == 0 {
		return m
	}
	var bar *progressbar.ProgressBar
	if c.progress {
		bar = progressbar.NewOptions(c.requests,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription(name),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("req"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(barEvery),
			progressbar.OptionClearOnFinish(),
		)
	}
	g.Go(func() error {
		tk := time.NewTicker(every)
		defer tk.Stop()
		start := time.Now()
		var lastLine time.Time
		for {
			select {
			case <-ctx.Done():
				if bar != nil {
					_ = bar.Finish()
				}
				if c.verbose {
					// A last line at the end, so even a run shorter than
					// verboseEvery shows its load once.
					fmt.Fprintln(stderr, loadLine(d.Stats()))
				}
				return nil
			case now := <-tk.C:
				if bar != nil {
					_ = bar.Set64(answered.Load())
				}
				if !c.verbose && c.plot == "" {
					continue
				}
				st := d.Stats()
				if c.plot != "" {
					m.keep(sampleOf(now.Sub(start), st))
				}
				if c.verbose && now.Sub(lastLine) >= verboseEvery {
					lastLine = now
					fmt.Fprintln(stderr, loadLine(st))
				}
			}
		}
	})
	return m
}

func sampleOf(at time.Duration, st dispatcher.Stats) sample {
	s := sample{at: at, pending: make([]int, len(st.Workers))}
	for i, w := range st.Workers {
		s.pending[i] = w.Pending
		if w.Removed {
			s.pending[i] = -1
		}
	}
	return s
}

// loadLine is Pike's output: each live worker's pending, then their mean
// and standard deviation now.
func loadLine(st dispatcher.Stats) string {
	var b strings.Builder
	for _, w := range st.Workers {
		if !w.Removed {
			fmt.Fprintf(&b, "%3d ", w.Pending)
		}
	}
	fmt.Fprintf(&b, "| %6.2f %5.2f", st.PendingMean, st.PendingStdDev)
	return b.String()
}

// isTerminal reports whether w is a terminal: the bar is for people, not
// for pipes, files or tests.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
