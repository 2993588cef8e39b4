package httpbalancer_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"

	"github.com/gobalancer/balancer/contrib/httpbalancer"
	"github.com/gobalancer/balancer/strategies"
)

// Backends join and leave while the proxy serves, and Stats counts what
// each one took. Health checks (every second here) run until Close.
func ExampleProxy_Add() {
	var targets []*url.URL
	for _, name := range []string{"a", "b"} {
		b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, name)
		}))
		defer b.Close()
		u, _ := url.Parse(b.URL)
		targets = append(targets, u)
	}
	s, _ := strategies.New("round-robin", strategies.Equal(1))
	p, err := httpbalancer.New(targets[:1], s,
		httpbalancer.WithHealthCheck(httpbalancer.HealthCheck{Path: "/", Interval: time.Second}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	proxy := httptest.NewServer(p)
	defer proxy.Close()
	get := func(n int) {
		var got []string
		defer func() { fmt.Println(strings.Join(got, " ")) }()
		for range n {
			resp, err := http.Get(proxy.URL)
			if err != nil {
				fmt.Println(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got = append(got, string(b))
		}
	}

	get(2)
	if err := p.Add(targets[1], 1); err != nil {
		fmt.Println(err)
	}
	get(4)
	if err := p.Remove(targets[0]); err != nil {
		fmt.Println(err)
	}
	get(2)
	for _, st := range p.Stats() {
		fmt.Println(st.Requests, "requests,", st.Errors, "errors, serving:", st.Serving)
	}
	// Output:
	// a a
	// a b a b
	// b b
	// 4 requests, 0 errors, serving: true
}
