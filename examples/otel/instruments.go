package main

import (
	"context"
	"errors"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/gobalancer/balancer/dispatcher"
)

// quantiles are the Stats.Latency percentiles, as the values of the
// "quantile" attribute of balancer.task.duration.
var quantiles = []struct {
	name  string
	value func(dispatcher.LatencyStats) float64
}{
	{"0.5", func(l dispatcher.LatencyStats) float64 { return l.P50.Seconds() }},
	{"0.9", func(l dispatcher.LatencyStats) float64 { return l.P90.Seconds() }},
	{"0.99", func(l dispatcher.LatencyStats) float64 { return l.P99.Seconds() }},
	{"0.999", func(l dispatcher.LatencyStats) float64 { return l.P999.Seconds() }},
	{"max", func(l dispatcher.LatencyStats) float64 { return l.Max.Seconds() }},
}

// Register creates asynchronous instruments on m that read d's Stats,
// once per collection for all of them: one callback, one snapshot, so the
// values of a collection agree with each other and d spends nothing on
// metrics between collections. Unregister the returned Registration
// before dropping d, or the meter keeps it reachable.
func Register(m metric.Meter, d *dispatcher.Dispatcher) (metric.Registration, error) {
	var errs []error
	counter := func(name, desc string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(name, metric.WithDescription(desc), metric.WithUnit("{request}"))
		errs = append(errs, err)
		return c
	}
	gauge := func(name, desc string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithDescription(desc), metric.WithUnit("{request}"))
		errs = append(errs, err)
		return g
	}
	var (
		dispatched = counter("balancer.dispatched", "Requests sent to workers.")
		completed  = counter("balancer.completed", "Requests workers reported done.")
		panics     = counter("balancer.panics", "Tasks that panicked.")
		goexits    = counter("balancer.goexits", "Tasks that called runtime.Goexit.")
		canceled   = counter("balancer.canceled", "Requests answered with their context's error instead of running.")
		replaced   = counter("balancer.replaced", "Worker goroutines replaced after a Goexit.")
		pending    = gauge("balancer.pending", "Requests at workers now.")
		queued     = gauge("balancer.queued", "Accepted requests waiting in the intake.")
		blocked    = gauge("balancer.blocked", "Submitters waiting for room in the intake.")
		wPending   = gauge("balancer.worker.pending", "Requests at the worker now.")
		wCompleted = counter("balancer.worker.completed", "Requests the worker finished.")
		samples    = counter("balancer.task.duration.samples", "Tasks whose run time was sampled.")
	)
	wBusy, err := m.Float64ObservableCounter("balancer.worker.busy",
		metric.WithDescription("Time the worker spent running tasks."), metric.WithUnit("s"))
	errs = append(errs, err)
	duration, err := m.Float64ObservableGauge("balancer.task.duration",
		metric.WithDescription("Sampled task run time, by quantile (and the max), over the dispatcher's life."), metric.WithUnit("s"))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := d.Stats()
		for _, c := range []struct {
			i metric.Int64Observable
			v int64
		}{
			{dispatched, s.Dispatched}, {completed, s.Completed}, {panics, s.Panics},
			{goexits, s.Goexits}, {canceled, s.Canceled}, {replaced, s.Replaced},
			{pending, int64(s.Pending)}, {queued, int64(s.Queued)}, {blocked, int64(s.Blocked)},
			{samples, s.Latency.Samples},
		} {
			o.ObserveInt64(c.i, c.v)
		}
		for _, w := range s.Workers {
			at := metric.WithAttributes(attribute.String("worker", strconv.Itoa(w.Index)))
			o.ObserveInt64(wPending, int64(w.Pending), at)
			o.ObserveInt64(wCompleted, w.Completed, at)
			o.ObserveFloat64(wBusy, w.Busy.Seconds(), at)
		}
		if s.Latency.Samples > 0 { // no sample is no value, not 0 s
			for _, q := range quantiles {
				o.ObserveFloat64(duration, q.value(s.Latency), metric.WithAttributes(attribute.String("quantile", q.name)))
			}
		}
		return nil
	}, dispatched, completed, panics, goexits, canceled, replaced, pending, queued, blocked,
		wPending, wCompleted, samples, wBusy, duration)
}
