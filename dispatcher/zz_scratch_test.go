package dispatcher_test

import (
	"context"
	"sync"
	"testing"

	"github.com/gobalancer/balancer/dispatcher"
)

func BenchmarkZZ(b *testing.B) {
	for _, name := range []string{"rings", "channels", "channels-c0"} {
		b.Run("engine="+name+"/batch", func(b *testing.B) {
			opts := []dispatcher.Option{dispatcher.WithEngine(dispatcher.Rings)}
			switch name {
			case "channels":
				opts = []dispatcher.Option{dispatcher.WithEngine(dispatcher.Channels)}
			case "channels-c0":
				opts = []dispatcher.Option{dispatcher.WithEngine(dispatcher.Channels), dispatcher.WithCompletionBuffer(0)}
			}
			d, _ := dispatcher.New[int](opts...)
			var wg sync.WaitGroup
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				wg.Add(1)
				_ = d.Go(ctx, func(context.Context) (int, error) { wg.Done(); return 0, nil })
			}
			wg.Wait()
			b.StopTimer()
			_ = d.Close(ctx)
		})
		b.Run("engine="+name+"/closed64", func(b *testing.B) {
			opts := []dispatcher.Option{dispatcher.WithEngine(dispatcher.Rings)}
			switch name {
			case "channels":
				opts = []dispatcher.Option{dispatcher.WithEngine(dispatcher.Channels)}
			case "channels-c0":
				opts = []dispatcher.Option{dispatcher.WithEngine(dispatcher.Channels), dispatcher.WithCompletionBuffer(0)}
			}
			d, _ := dispatcher.New[int](opts...)
			closedLoop(b, d, tasks["empty"])
			_ = d.Close(context.Background())
		})
	}
}
