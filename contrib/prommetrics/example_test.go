package prommetrics_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gobalancer/balancer/contrib/prommetrics"
	"github.com/gobalancer/balancer/dispatcher"
)

// A dispatcher's metrics on /metrics of the program's own mux.
func Example() {
	d, err := dispatcher.New(dispatcher.WithWorkers(4))
	if err != nil {
		panic(err)
	}
	defer d.Close(context.Background())

	reg := prometheus.NewRegistry()
	reg.MustRegister(prommetrics.New(d, prommetrics.WithConstLabels(prometheus.Labels{"pool": "images"})))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// http.ListenAndServe("127.0.0.1:9090", mux)

	v, _ := dispatcher.Do(context.Background(), d, func(context.Context) (int, error) { return 42, nil })
	fmt.Println(v)
	// Output: 42
}
