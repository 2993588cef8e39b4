package dispatcher_test

import (
	"context"
	"testing"

	"github.com/gobalancer/balancer/dispatcher"
)

// BenchmarkSchedule: what each schedule costs per task, on both engines:
// empty tasks from 64 closed-loop requesters (Do) and in a batch (Go).
// Allocations are reported per task: none on Do and Go under every
// schedule.
//
//	go test -run '^$' -bench Schedule -count 10 ./dispatcher
func BenchmarkSchedule(b *testing.B) {
	for _, eng := range engines {
		for _, s := range schedules {
			b.Run("engine="+eng.String()+"/schedule="+s.String(), func(b *testing.B) {
				newD := func(b *testing.B) *dispatcher.Dispatcher {
					d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithSchedule(s))
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { _ = d.Close(context.Background()) })
					return d
				}
				b.Run("op=Do", func(b *testing.B) { closedLoop(b, newD(b), tasks["empty"]) })
				b.Run("op=Go", func(b *testing.B) {
					d := newD(b)
					ctx := context.Background()
					task := tasks["empty"]
					goTask := func(ctx context.Context) error { _, err := task(ctx); return err }
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						if err := d.Go(ctx, goTask); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := dispatcher.Do(ctx, d, task); err != nil { // FIFO per worker: after the batch
						b.Fatal(err)
					}
				})
			})
		}
	}
}
