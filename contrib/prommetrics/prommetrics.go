// Package prommetrics exports a dispatcher's Stats to Prometheus: a
// prometheus.Collector that takes one Stats snapshot per scrape, so the
// dispatcher does no work for metrics between scrapes and every series of
// a scrape comes from the same instant.
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(prommetrics.New(d))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// It is its own module so that the root module does not require
// client_golang.
package prommetrics

import (
	"math"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gobalancer/balancer/dispatcher"
)

// DefaultNamespace prefixes every metric name unless WithNamespace says
// otherwise.
const DefaultNamespace = "balancer"

// Option configures New.
type Option func(*options)

type options struct {
	namespace string
	labels    prometheus.Labels
}

// WithNamespace sets the metric names' prefix (default DefaultNamespace;
// "" for none).
func WithNamespace(ns string) Option { return func(o *options) { o.namespace = ns } }

// WithConstLabels adds labels with fixed values to every series, to tell
// the dispatchers of one process apart (two collectors with the same
// names and labels cannot be registered together).
func WithConstLabels(l prometheus.Labels) Option {
	return func(o *options) { o.labels = l }
}

// metric is one series family: how to describe it and read it from Stats.
type metric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(*dispatcher.Stats) float64
}

// Collector is a prometheus.Collector over one dispatcher's Stats.
type Collector struct {
	d       *dispatcher.Dispatcher
	metrics []metric

	// Per worker, labelled worker="<index>".
	wPending, wCompleted, wBusy, wWeight *prometheus.Desc
	// The sampled task run times (Stats.Latency).
	latency, latencyMax *prometheus.Desc
	// Per tenant (Stats.Tenants, labelled tenant="<name>") and per
	// priority class (Stats.Classes, labelled class="0".."7").
	tenant, class flowDescs
}

// flowDescs describes the series of one FlowStats line.
type flowDescs struct {
	queued, running, dispatched, completed, refused, wait *prometheus.Desc
}

// New returns a Collector for d; register it with a prometheus.Registerer.
// It reads d only when collected; after d is closed it reports d's final
// Stats.
func New(d *dispatcher.Dispatcher, opts ...Option) *Collector {
	o := options{namespace: DefaultNamespace}
	for _, opt := range opts {
		opt(&o)
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(o.namespace, "", name), help, labels, o.labels)
	}
	counter := func(name, help string, v func(*dispatcher.Stats) int64) metric {
		return metric{desc(name, help), prometheus.CounterValue, func(s *dispatcher.Stats) float64 { return float64(v(s)) }}
	}
	gauge := func(name, help string, v func(*dispatcher.Stats) int) metric {
		return metric{desc(name, help), prometheus.GaugeValue, func(s *dispatcher.Stats) float64 { return float64(v(s)) }}
	}
	c := &Collector{
		d: d,
		metrics: []metric{
			counter("dispatched_total", "Requests sent to workers.", func(s *dispatcher.Stats) int64 { return s.Dispatched }),
			counter("completed_total", "Requests workers reported done.", func(s *dispatcher.Stats) int64 { return s.Completed }),
			counter("stalls_total", "Picks that found the worker full and waited.", func(s *dispatcher.Stats) int64 { return s.Stalls }),
			counter("panics_total", "Tasks that panicked.", func(s *dispatcher.Stats) int64 { return s.Panics }),
			counter("goexits_total", "Tasks that called runtime.Goexit.", func(s *dispatcher.Stats) int64 { return s.Goexits }),
			counter("canceled_total", "Requests answered with their context's error instead of running.", func(s *dispatcher.Stats) int64 { return s.Canceled }),
			counter("replaced_total", "Worker goroutines replaced after a Goexit.", func(s *dispatcher.Stats) int64 { return s.Replaced }),
			counter("panic_handler_failures_total", "Panic handler calls that panicked or called Goexit.", func(s *dispatcher.Stats) int64 { return s.PanicHandlerFailures }),
			gauge("pending", "Requests at workers now.", func(s *dispatcher.Stats) int { return s.Pending }),
			gauge("queued", "Accepted requests waiting in the intake for the balancer.", func(s *dispatcher.Stats) int { return s.Queued }),
			gauge("blocked", "Submitters waiting for room in the intake.", func(s *dispatcher.Stats) int { return s.Blocked }),
			gauge("held", "1 while a request waits for its picked worker's room.", func(s *dispatcher.Stats) int {
				if s.Held {
					return 1
				}
				return 0
			}),
			{desc("pending_stddev", "Standard deviation of pending across live workers (Pike's figure)."), prometheus.GaugeValue,
				func(s *dispatcher.Stats) float64 { return s.PendingStdDev }},
		},
		wPending:   desc("worker_pending", "Requests sent to the worker and not yet reported done.", "worker"),
		wCompleted: desc("worker_completed_total", "Requests the worker finished.", "worker"),
		wBusy:      desc("worker_busy_seconds_total", "Time the worker spent running tasks.", "worker"),
		wWeight:    desc("worker_weight", "The worker's weight; 0 once removed.", "worker"),
		latency: desc("task_duration_seconds",
			"Run time of a random sample of about one task in "+strconv.Itoa(dispatcher.LatencySampleEvery)+
				"; quantiles within "+strconv.FormatFloat(100*dispatcher.LatencyRelativeError, 'f', 2, 64)+"%."),
		latencyMax: desc("task_duration_max_seconds", "The longest sampled task run time."),
	}
	flow := func(prefix, of, label string) flowDescs {
		return flowDescs{
			queued:     desc(prefix+"_queued", "Requests of the "+of+" waiting in the balancer's schedule (0 under FIFO).", label),
			running:    desc(prefix+"_running", "Requests of the "+of+" handed to a worker and not finished.", label),
			dispatched: desc(prefix+"_dispatched_total", "Requests of the "+of+" handed to a worker.", label),
			completed:  desc(prefix+"_completed_total", "Requests of the "+of+" finished at a worker.", label),
			refused:    desc(prefix+"_refused_total", "Requests of the "+of+" refused at submit by deadline admission.", label),
			wait: desc(prefix+"_wait_seconds",
				"Wait of the "+of+"'s requests from the balancer taking them to their start, for a sample of about one request in "+
					strconv.Itoa(dispatcher.LatencySampleEvery)+"; quantiles within "+
					strconv.FormatFloat(100*dispatcher.LatencyRelativeError, 'f', 2, 64)+"%.", label),
		}
	}
	c.tenant = flow("tenant", "tenant", "tenant")
	c.class = flow("class", "priority class", "class")
	return c
}

func (f *flowDescs) all() []*prometheus.Desc {
	return []*prometheus.Desc{f.queued, f.running, f.dispatched, f.completed, f.refused, f.wait}
}

// Describe sends every series' description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
	for _, d := range []*prometheus.Desc{c.wPending, c.wCompleted, c.wBusy, c.wWeight, c.latency, c.latencyMax} {
		ch <- d
	}
	for _, d := range append(c.tenant.all(), c.class.all()...) {
		ch <- d
	}
}

// Collect takes one Stats snapshot and sends every series from it.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.d.Stats()
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(&s))
	}
	for _, w := range s.Workers {
		i := strconv.Itoa(w.Index)
		weight := w.Weight
		if w.Removed {
			weight = 0
		}
		ch <- prometheus.MustNewConstMetric(c.wPending, prometheus.GaugeValue, float64(w.Pending), i)
		ch <- prometheus.MustNewConstMetric(c.wCompleted, prometheus.CounterValue, float64(w.Completed), i)
		ch <- prometheus.MustNewConstMetric(c.wBusy, prometheus.CounterValue, w.Busy.Seconds(), i)
		ch <- prometheus.MustNewConstMetric(c.wWeight, prometheus.GaugeValue, float64(weight), i)
	}
	ch <- summary(c.latency, s.Latency)
	ch <- prometheus.MustNewConstMetric(c.latencyMax, prometheus.GaugeValue, s.Latency.Max.Seconds())
	collectFlows(ch, &c.tenant, s.Tenants)
	collectFlows(ch, &c.class, s.Classes)
}

// collectFlows sends the series of each line, labelled with its name.
func collectFlows(ch chan<- prometheus.Metric, f *flowDescs, lines []dispatcher.FlowStats) {
	for _, l := range lines {
		ch <- prometheus.MustNewConstMetric(f.queued, prometheus.GaugeValue, float64(l.Queued), l.Name)
		ch <- prometheus.MustNewConstMetric(f.running, prometheus.GaugeValue, float64(l.Running), l.Name)
		ch <- prometheus.MustNewConstMetric(f.dispatched, prometheus.CounterValue, float64(l.Dispatched), l.Name)
		ch <- prometheus.MustNewConstMetric(f.completed, prometheus.CounterValue, float64(l.Completed), l.Name)
		ch <- prometheus.MustNewConstMetric(f.refused, prometheus.CounterValue, float64(l.Refused), l.Name)
		ch <- summary(f.wait, l.Wait, l.Name)
	}
}

// summary is l as a summary: quantiles 0.5, 0.9, 0.99 and 0.999.
func summary(d *prometheus.Desc, l dispatcher.LatencyStats, labels ...string) prometheus.Metric {
	q := map[float64]float64{0.5: l.P50.Seconds(), 0.9: l.P90.Seconds(), 0.99: l.P99.Seconds(), 0.999: l.P999.Seconds()}
	if l.Samples == 0 {
		// As client_golang's own summaries: no observation is not a 0 s one.
		for k := range q {
			q[k] = math.NaN()
		}
	}
	return prometheus.MustNewConstSummary(d, uint64(l.Samples), l.Sum.Seconds(), q, labels...)
}
