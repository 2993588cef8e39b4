package worker_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FuzzRing drives one worker from the fuzz bytes (byte 0: depth 1..8;
// each later byte one producer step: b%4 == 0 or 1 puts an item whose kind
// is b/4%3 (run, panic, Goexit), 2 publishes, 3 yields), keeping at most
// depth items unfinished as the balancer does; with an odd last byte it
// then takes back whatever is still queued. Every item must end exactly
// once (ran, panicked, exited or taken), Done must count exactly the
// worker's, Replaced the Goexits, and Close must stop the worker.
func FuzzRing(f *testing.F) {
	f.Add([]byte{0, 0, 2, 4, 2, 8, 2, 3})
	f.Add([]byte{3, 0, 0, 0, 0, 1, 1, 1, 1, 2, 0, 0, 2, 1})
	f.Add([]byte{7, 8, 8, 8, 3, 2, 0, 4, 0, 4, 2, 3, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		if len(data) > 256 {
			data = data[:256]
		}
		depth := 1 + int(data[0]%8)
		kinds := make([]int, len(data)) // never grown: the worker reads it
		w, o, wg := containWorker(depth, func(item int) {
			switch kinds[item] {
			case 1:
				panic(item)
			case 2:
				runtime.Goexit()
			}
		})
		deadline := time.Now().Add(10 * time.Second)
		items := 0
		for _, b := range data[1:] {
			switch b % 4 {
			case 0, 1:
				for w.Pushed()-w.Done() >= uint64(depth) {
					require.True(t, time.Now().Before(deadline), "worker made no room within 10s")
					w.Publish() // a full ring is published, as each balancer turn does
					runtime.Gosched()
				}
				kinds[items] = int(b / 4 % 3) // written before the item is published
				w.Put(items)
				items++
			case 2:
				w.Publish()
			case 3:
				runtime.Gosched()
			}
		}
		w.Publish()
		var taken []int
		if data[len(data)-1]%2 == 1 {
			for {
				item, ok := w.TryTake()
				if !ok {
					break
				}
				taken = append(taken, item)
			}
		}
		stop(t, w, wg)
		ends := make([]int, items)
		for item, n := range o.ran {
			ends[item] += n
			require.Zero(t, kinds[item])
		}
		for item := range o.panicked {
			ends[item]++
			require.Equal(t, 1, kinds[item])
		}
		for item, n := range o.exited {
			ends[item] += n
			require.Equal(t, 2, kinds[item])
		}
		for _, item := range taken {
			ends[item]++
		}
		for i, n := range ends {
			require.Equal(t, 1, n, "item %d ended %d times", i, n)
		}
		require.Equal(t, uint64(items-len(taken)), w.Done())
		require.Equal(t, int64(len(o.exited)), w.Replaced())
	})
}
