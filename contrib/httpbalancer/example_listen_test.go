package httpbalancer_test

import (
	"log"
	"net/http"
	"net/url"
	"os"

	"github.com/gobalancer/balancer/contrib/httpbalancer"
	"github.com/gobalancer/balancer/strategies"
)

// A proxy on :8080 over the backends named on the command line, picked by
// least-requests (pending requests over weight, all weights 1): a whole
// program's main. It has no Output line because it serves until killed, so
// go test compiles it and never runs it.
func Example_listenAndServe() {
	var targets []*url.URL
	for _, arg := range os.Args[1:] { // e.g. http://10.0.0.1:8080 http://10.0.0.2:8080
		u, err := url.Parse(arg)
		if err != nil {
			log.Fatal(err)
		}
		targets = append(targets, u)
	}
	s, err := strategies.New("least-requests", strategies.Equal(len(targets)))
	if err != nil {
		log.Fatal(err)
	}
	p, err := httpbalancer.New(targets, s)
	if err != nil {
		log.Fatal(err) // no targets, or one that is not an absolute URL
	}
	log.Fatal(http.ListenAndServe(":8080", p))
}
