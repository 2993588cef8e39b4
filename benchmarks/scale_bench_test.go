package benchmarks

import (
	"fmt"
	"testing"
)

// scaleRequesters are the requester counts of the dispatcher's
// BenchmarkScaleRequesters.
var scaleRequesters = []int{1, 64, 1000, 10000}

// BenchmarkScaleRequesters is the dispatcher package's benchmark of the
// same name with pond in place of our engines: ns per empty Do against
// the number of closed-loop requesters, over GOMAXPROCS workers. Named
// engine=pond/strategy=fifo so internal/scaleplot draws it beside them:
//
//	go test -run '^$' -bench ScaleRequesters -benchtime 300000x -count 5 . >> scale.txt
func BenchmarkScaleRequesters(b *testing.B) {
	for _, im := range Impls {
		if im.Name != "pond" {
			continue
		}
		for _, requesters := range scaleRequesters {
			b.Run(fmt.Sprintf("engine=%s/strategy=fifo/requesters=%d", im.Name, requesters), func(b *testing.B) {
				p := im.New(Workers(), Task("empty"))
				defer p.Close()
				b.ReportAllocs()
				b.ResetTimer()
				doFrom(p, max(1, min(requesters, b.N)), b.N)
				b.StopTimer()
			})
		}
	}
}
