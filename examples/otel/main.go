// Command otel publishes a dispatcher's Stats as OpenTelemetry metrics
// through asynchronous instruments (Register), runs some work, collects
// once with a ManualReader and prints what an exporter would send.
//
//	go run ./examples/otel -tasks 10000
//
// A real program gives the MeterProvider a periodic reader with its
// exporter instead (OTLP, Prometheus, stdout): Register is the same.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gobalancer/balancer/dispatcher"
)

func main() {
	tasks := flag.Int("tasks", 10000, "tasks to run before collecting")
	workers := flag.Int("workers", 4, "worker goroutines")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *tasks, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "otel:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, tasks, workers int) (err error) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() {
		if e := mp.Shutdown(ctx); err == nil {
			err = e
		}
	}()
	d, err := dispatcher.New(dispatcher.WithWorkers(workers))
	if err != nil {
		return err
	}
	defer func() {
		if e := d.Close(ctx); err == nil {
			err = e
		}
	}()
	reg, err := Register(mp.Meter("github.com/gobalancer/balancer/examples/otel"), d)
	if err != nil {
		return err
	}
	defer func() {
		if e := reg.Unregister(); err == nil {
			err = e
		}
	}()

	for i := range tasks {
		if _, err := dispatcher.Do(ctx, d, func(context.Context) (int, error) { time.Sleep(10 * time.Microsecond); return i, nil }); err != nil {
			return err
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return err
	}
	for _, line := range lines(rm) {
		fmt.Fprintln(out, line)
	}
	return nil
}

// lines renders every data point as "name{attributes} value", sorted.
func lines(rm metricdata.ResourceMetrics) []string {
	var ls []string
	add := func(name string, attrs attribute.Set, v any) {
		var kv []string
		for it := attrs.Iter(); it.Next(); {
			a := it.Attribute()
			kv = append(kv, string(a.Key)+"="+a.Value.String())
		}
		ls = append(ls, fmt.Sprintf("%s{%s} %v", name, strings.Join(kv, ","), v))
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range data.DataPoints {
					add(m.Name, p.Attributes, p.Value)
				}
			case metricdata.Sum[float64]:
				for _, p := range data.DataPoints {
					add(m.Name, p.Attributes, p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range data.DataPoints {
					add(m.Name, p.Attributes, p.Value)
				}
			case metricdata.Gauge[float64]:
				for _, p := range data.DataPoints {
					add(m.Name, p.Attributes, p.Value)
				}
			}
		}
	}
	slices.Sort(ls)
	return ls
}
