package main

import (
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// maxPoints bounds the points of one line, so the PNG stays small (well
// under 200 KB) whatever the number of requests.
const maxPoints = 300

// plotRun writes a PNG to path: on top, each worker's cumulative picks
// against its ideal line t·w_i/W (the lua-resty-balancer WRR issue's graph: a flat stretch is a
// worker starved, a steady gap is a share off its weight); below, if there
// are samples, each worker's pending over time (Pike's picture of balance).
// It uses gonum/plot, which renders offline with its embedded fonts.
func plotRun(path string, weights []int, order []int32, samples []sample) error {
	top, err := cumulativePlot(weights, order)
	if err != nil {
		return err
	}
	plots := [][]*plot.Plot{{top}}
	if len(samples) > 0 {
		bottom, err := pendingPlot(samples)
		if err != nil {
			return err
		}
		plots = append(plots, []*plot.Plot{bottom})
	}
	img := vgimg.New(vg.Points(540), vg.Points(300*float64(len(plots))))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Points(12),
		PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	cv := plot.Align(plots, tiles, dc)
	for j := range plots {
		plots[j][0].Draw(cv[j][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

func cumulativePlot(weights []int, order []int32) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "cumulative picks per worker (dashed: ideal t·w/W)"
	p.X.Label.Text = "pick t"
	p.Y.Label.Text = "picks"
	n := 0
	for _, i := range order {
		n = max(n, int(i)+1)
	}
	n = max(n, len(weights))
	step := max(1, len(order)/maxPoints)
	lines := make([]plotter.XYs, n)
	count := make([]int, n)
	for t, i := range order {
		if i >= 0 {
			count[i]++
		}
		if (t+1)%step == 0 || t == len(order)-1 {
			for k := range lines {
				lines[k] = append(lines[k], plotter.XY{X: float64(t + 1), Y: float64(count[k])})
			}
		}
	}
	W := 0
	for _, w := range weights {
		W += w
	}
	// One ideal line per distinct weight, dashed, under the real lines.
	seen := map[int]bool{}
	for _, w := range weights {
		if seen[w] || W == 0 {
			continue
		}
		seen[w] = true
		T := float64(len(order))
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: T, Y: T * float64(w) / float64(W)}})
		if err != nil {
			return nil, err
		}
		l.Color = color.Gray{Y: 90}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
	}
	for k, xy := range lines {
		if len(xy) == 0 {
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(k)
		p.Add(l)
		if n <= 12 {
			p.Legend.Add(legendName(k, weights), l)
		}
	}
	p.Legend.Top, p.Legend.Left = true, true
	return p, nil
}

func pendingPlot(samples []sample) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "pending per worker over time"
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = "pending"
	n := len(samples[len(samples)-1].pending)
	step := max(1, len(samples)/maxPoints)
	for k := range n {
		var xy plotter.XYs
		for j, s := range samples {
			if j%step != 0 || k >= len(s.pending) || s.pending[k] < 0 {
				continue
			}
			xy = append(xy, plotter.XY{X: s.at.Seconds(), Y: float64(s.pending[k])})
		}
		if len(xy) == 0 {
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(k)
		p.Add(l)
	}
	return p, nil
}

func legendName(k int, weights []int) string {
	if k < len(weights) {
		return fmt.Sprintf("worker %d (w %d)", k, weights[k])
	}
	return fmt.Sprintf("worker %d", k)
}
