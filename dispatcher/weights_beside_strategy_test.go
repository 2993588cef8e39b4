package dispatcher_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/dispatcher"
	"github.com/gobalancer/balancer/strategies"
)

// TestWeightsBesideStrategyHonoured: WithWeights beside WithStrategy
// is accepted (plan checks the weights), and WithWeights says "Weight 0
// drains a worker". The strategy was built over its own (equal) weights and
// never hears of WithWeights, so the zero-weight worker keeps getting
// requests: the option is accepted and ignored, or, read the other way,
// two contradicting weight sets are accepted. Either refuse the pair or
// make the weights reach the strategy.
func TestWeightsBesideStrategyHonoured(t *testing.T) {
	forEachEngine(t, func(t *testing.T, eng dispatcher.Engine) {
		// Control: the same strategy built by name over WithWeights(1, 0)
		// never picks worker 1.
		ctl := newDispatcher(t, dispatcher.WithEngine(eng), dispatcher.WithStrategyName("round-robin"), dispatcher.WithWeights(1, 0))
		for i := range 20 {
			_, err := dispatcher.Do(context.Background(), ctl, ok(i))
			require.NoError(t, err)
		}
		require.Zero(t, ctl.Stats().Workers[1].Completed, "control: round-robin by name honours weight 0")

		s, err := strategies.New("round-robin", strategies.Equal(2))
		require.NoError(t, err)
		d, err := dispatcher.New(dispatcher.WithEngine(eng), dispatcher.WithStrategy(s), dispatcher.WithWeights(1, 0))
		if err != nil {
			require.ErrorIs(t, err, dispatcher.ErrBadOption) // refusing the pair is a fix too
			return
		}
		t.Cleanup(func() { closeWithin(t, d, 10*time.Second) })
		for i := range 20 {
			_, err := dispatcher.Do(context.Background(), d, ok(i))
			require.NoError(t, err)
		}
		st := d.Stats()
		require.Equal(t, 0, st.Workers[1].Weight, "Stats reports worker 1 at weight 0")
		require.Zero(t, st.Workers[1].Completed, "worker 1 has weight 0 (WithWeights(1, 0)) but ran %d of 20 requests", st.Workers[1].Completed)
	})
}
