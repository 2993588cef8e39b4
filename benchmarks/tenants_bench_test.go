package benchmarks

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alitto/pond/v2"
	"github.com/gobalancer/balancer/dispatcher"
	"golang.org/x/sync/errgroup"
)

// The mixed workload of the scheduling issue: one tenant keeps the workers
// saturated with a backlog of CPU-bound tasks, another submits small groups
// now and then and waits for them.
const (
	// tenantsBacklog bounds the background's tasks submitted and not
	// finished: enough that thousands wait at all times.
	tenantsBacklog = 4096
	// tenantsGroup is the interactive group's size.
	tenantsGroup = 3
	// tenantsPeriod is the interactive tenant's cadence: one group every
	// 10 ms (the next starts at once when a group takes longer).
	tenantsPeriod = 10 * time.Millisecond
	// tenantsDeadline is the interactive group's timeout under ByDeadline,
	// and the completion time beyond which a group counts as missed.
	tenantsDeadline = 20 * time.Millisecond
	// bgTaskUS and iaTaskUS are the background's and the interactive
	// tenant's task lengths, in µs of CPU spin.
	bgTaskUS = 100
	iaTaskUS = 20
)

// tenantsBackground is the saturating tenant's state, common to every
// implementation: its task, and how many of them ran. Once stop is set the
// task returns at once, so the backlog drains in no time at the end.
type tenantsBackground struct {
	stop atomic.Bool
	done atomic.Int64
	spin int // spin iterations of one task
}

func (bg *tenantsBackground) task() {
	if bg.stop.Load() {
		return
	}
	spinIters(bg.spin)
	bg.done.Add(1)
}

// tenantsImpl builds pools of w workers, starts the background tenant on
// them (unless idle) and returns run, which submits one interactive group
// of tenantsGroup tasks and waits for it, and stop, which ends the
// background and releases everything, leaving no goroutine behind.
type tenantsImpl struct {
	name     string
	deadline bool // run's group has a tenantsDeadline timeout: report misses
	start    func(w int, bg *tenantsBackground, ia func()) (run func() error, stop func())
}

var tenantsImpls = []tenantsImpl{
	{"balancer-fifo", false, balancerTenants(dispatcher.FIFO, true)},
	{"balancer-priority", false, balancerTenants(dispatcher.ByPriority, true)},
	{"balancer-deadline", true, balancerTenants(dispatcher.ByDeadline, true)},
	{"balancer-fair", false, balancerTenants(dispatcher.Fair, true)},
	{"balancer-idle", false, balancerTenants(dispatcher.FIFO, false)},
	// Unlimited: the background is what a user writes first, a fan-out
	// group with no Limit on the default intake, fed as fast as Go takes
	// its tasks: it fills the intake, and the interactive tenant gets in
	// only through its lane. Per engine, against the idle baseline of
	// the same engine.
	{"unlimited-priority/engine=channels", false, unlimitedTenants(dispatcher.ByPriority, dispatcher.Channels, true)},
	{"unlimited-deadline/engine=channels", true, unlimitedTenants(dispatcher.ByDeadline, dispatcher.Channels, true)},
	{"unlimited-fair/engine=channels", false, unlimitedTenants(dispatcher.Fair, dispatcher.Channels, true)},
	{"unlimited-idle/engine=channels", false, unlimitedTenants(dispatcher.FIFO, dispatcher.Channels, false)},
	{"unlimited-priority/engine=rings", false, unlimitedTenants(dispatcher.ByPriority, dispatcher.Rings, true)},
	{"unlimited-deadline/engine=rings", true, unlimitedTenants(dispatcher.ByDeadline, dispatcher.Rings, true)},
	{"unlimited-fair/engine=rings", false, unlimitedTenants(dispatcher.Fair, dispatcher.Rings, true)},
	{"unlimited-idle/engine=rings", false, unlimitedTenants(dispatcher.FIFO, dispatcher.Rings, false)},
	{"pond", false, pondTenants},
	{"errgroup", false, errgroupTenants},
}

// balancerTenants is one dispatcher of w workers under schedule s. The
// background is one long-lived group, Limit(tenantsBacklog), fed by a
// goroutine whose Go waits for room, on an intake of tenantsBacklog + 64;
// the interactive tenant is a new group
// per batch: of class MaxPriority under ByPriority, with a 20 ms timeout
// under ByDeadline, Share(4) against the background's Share(1) under Fair.
// Without background (the idle baseline) the dispatcher runs only the
// interactive groups.
func balancerTenants(s dispatcher.Schedule, background bool) func(int, *tenantsBackground, func()) (func() error, func()) {
	return tenantsOn(s, background, []dispatcher.Option{dispatcher.WithIntakeBuffer(tenantsBacklog + 64)}, dispatcher.Limit(tenantsBacklog))
}

// unlimitedTenants is balancerTenants with the background unlimited, on
// engine e with its default intake.
func unlimitedTenants(s dispatcher.Schedule, e dispatcher.Engine, background bool) func(int, *tenantsBackground, func()) (func() error, func()) {
	return tenantsOn(s, background, []dispatcher.Option{dispatcher.WithEngine(e)})
}

// tenantsOn builds the dispatcher with opts beside the schedule, the
// background group with bgLimit (none: unlimited).
func tenantsOn(s dispatcher.Schedule, background bool, opts []dispatcher.Option, bgLimit ...dispatcher.GroupOption) func(int, *tenantsBackground, func()) (func() error, func()) {
	return func(w int, bg *tenantsBackground, ia func()) (func() error, func()) {
		// The intake holds the whole backlog, so the schedule chooses
		// among all of it; with the default (w × 256) the background's
		// submitter would wait for room with most of its backlog. It has
		// room beyond the background's Limit, as a deployment gives it:
		// a tenant that fills the intake makes every other wait in line
		// behind its submitter, whatever the schedule (the intake bound
		// is shared; Limit is what keeps one tenant from taking it all).
		d, err := dispatcher.New(append([]dispatcher.Option{dispatcher.WithWorkers(w), dispatcher.WithSchedule(s)}, opts...)...)
		if err != nil {
			panic(err) // static options: a programming error
		}
		var bgOpts, iaOpts []dispatcher.GroupOption
		bgOpts = append(bgOpts, dispatcher.Tenant("background"))
		bgOpts = append(bgOpts, bgLimit...)
		iaOpts = append(iaOpts, dispatcher.Tenant("interactive"))
		if s == dispatcher.Fair {
			bgOpts = append(bgOpts, dispatcher.Share(1))
			iaOpts = append(iaOpts, dispatcher.Share(4))
		}

		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		if background {
			g := dispatcher.NewGroup[struct{}](ctx, d, bgOpts...)
			task := func(context.Context) (struct{}, error) { bg.task(); return struct{}{}, nil }
			wg.Go(func() {
				for g.Go(task) == nil {
				}
				_, _ = g.Wait() // the cancellation's error: expected
			})
		}

		iaTask := func(context.Context) (struct{}, error) { ia(); return struct{}{}, nil }
		run := func() error {
			gctx := context.Background()
			if s == dispatcher.ByDeadline {
				var cancel context.CancelFunc
				gctx, cancel = context.WithTimeout(gctx, tenantsDeadline)
				defer cancel()
			}
			g := dispatcher.NewGroup[struct{}](gctx, d, iaOpts...)
			for range tenantsGroup {
				var err error
				if s == dispatcher.ByPriority {
					err = g.Priority(dispatcher.MaxPriority).Go(iaTask)
				} else {
					err = g.Go(iaTask)
				}
				if err != nil {
					break // Wait returns it
				}
			}
			_, err := g.Wait()
			return err
		}
		stop := func() {
			bg.stop.Store(true)
			cancel()
			wg.Wait()
			_ = d.Close(context.Background())
		}
		return run, stop
	}
}

// pondTenants is what a pond v2 user isolating two tenants on w workers
// writes: one pool of w, a subpool per tenant. The background gets half of
// the workers (pond's documented use of subpools: cap a tenant to part of
// the pool), so the interactive tenant always finds one free; it may use
// them all. The background's backlog waits in its subpool's queue, bounded
// by a semaphore of tenantsBacklog.
func pondTenants(w int, bg *tenantsBackground, ia func()) (func() error, func()) {
	p := pond.NewPool(w)
	bgPool := p.NewSubpool(max(1, w/2))
	iaPool := p.NewSubpool(w)

	quit := make(chan struct{})
	sem := make(chan struct{}, tenantsBacklog)
	task := func() { bg.task(); <-sem }
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case sem <- struct{}{}:
				bgPool.Submit(task)
			case <-quit:
				return
			}
		}
	})

	run := func() error {
		g := iaPool.NewGroup()
		for range tenantsGroup {
			g.Submit(ia)
		}
		return g.Wait()
	}
	stop := func() {
		bg.stop.Store(true)
		close(quit)
		wg.Wait()
		bgPool.StopAndWait()
		iaPool.StopAndWait()
		p.StopAndWait()
	}
	return run, stop
}

// errgroupTenants is what an errgroup user isolating two tenants writes: a
// group per tenant, each with SetLimit(w). errgroup has no queue and no
// shared workers: the background's backlog is its submitter waiting in Go,
// and the two groups together run up to 2w goroutines on w cores, which
// the Go scheduler time-slices: the oversubscription is the point of the
// comparison.
func errgroupTenants(w int, bg *tenantsBackground, ia func()) (func() error, func()) {
	var bgGroup errgroup.Group
	bgGroup.SetLimit(w)
	task := func() error { bg.task(); return nil }
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-quit:
				return
			default:
			}
			bgGroup.Go(task)
		}
	})

	iaTask := func() error { ia(); return nil }
	run := func() error {
		var g errgroup.Group
		g.SetLimit(w)
		for range tenantsGroup {
			g.Go(iaTask)
		}
		return g.Wait()
	}
	stop := func() {
		bg.stop.Store(true)
		close(quit)
		wg.Wait()
		_ = bgGroup.Wait()
	}
	return run, stop
}

// BenchmarkTenants is the mixed workload of the scheduling issue, on
// GOMAXPROCS workers: a background tenant keeps them saturated with
// 100 µs CPU-spin tasks (up to 4096 submitted and not finished at all
// times), while an interactive tenant submits a group of 3 tasks of 20 µs
// spin every 10 ms and waits for it. One op is one interactive group, so
// -benchtime 200x takes about 2 s per sub-benchmark (except where groups
// take longer than 10 ms: balancer-fifo's wait behind the whole backlog,
// about 200 ms, makes its 200 groups take some 45 s). Metrics: p50-ms and
// p99-ms, the completion time of an interactive group from its first
// submit to its Wait's return; bg-tasks/s, the background's throughput
// meanwhile; under balancer-deadline (groups with a 20 ms timeout),
// missed, the number of the run's groups that missed it. ns/op is mostly
// the 10 ms cadence; B/op and allocs/op include the background's share.
//
// balancer-fifo, -priority (interactive in class MaxPriority), -deadline
// and -fair (interactive Share(4), background Share(1)) are our
// dispatcher under each schedule; balancer-idle has no background: the
// latency floor. pond and errgroup are how their users isolate tenants
// (see pondTenants, errgroupTenants). Run it with
//
//	cd benchmarks && go test -run '^$' -bench 'Tenants' -benchtime 200x -count 5
func BenchmarkTenants(b *testing.B) {
	calibrate()
	bgSpin := int(bgTaskUS * itersPerUS)
	iaSpin := int(iaTaskUS * itersPerUS)
	ia := func() { spinIters(iaSpin) }
	for _, im := range tenantsImpls {
		b.Run("impl="+im.name, func(b *testing.B) {
			bg := &tenantsBackground{spin: bgSpin}
			run, stop := im.start(Workers(), bg, ia)
			defer stop()
			// Let the background fill its backlog and the workers settle
			// before the clock starts.
			time.Sleep(50 * time.Millisecond)

			lat := make([]time.Duration, 0, b.N)
			missed := 0
			b.ReportAllocs()
			b.ResetTimer()
			bgStart, start := bg.done.Load(), time.Now()
			next := start
			for range b.N {
				if wait := time.Until(next); wait > 0 {
					time.Sleep(wait)
				}
				t0 := time.Now()
				err := run()
				el := time.Since(t0)
				lat = append(lat, el)
				switch {
				case im.deadline && errors.Is(err, context.DeadlineExceeded):
					missed++
				case err != nil:
					b.Fatal(err)
				case im.deadline && el > tenantsDeadline:
					missed++
				}
				next = next.Add(tenantsPeriod)
				if now := time.Now(); next.Before(now) {
					next = now // late: the next group starts at once
				}
			}
			elapsed := time.Since(start)
			bgDone := bg.done.Load() - bgStart
			b.StopTimer()

			slices.Sort(lat)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
			b.ReportMetric(ms(lat[max(0, (len(lat)*99+99)/100-1)]), "p99-ms")
			b.ReportMetric(float64(bgDone)/elapsed.Seconds(), "bg-tasks/s")
			if im.deadline {
				b.ReportMetric(float64(missed), "missed")
			}
		})
	}
}
