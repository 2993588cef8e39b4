package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// maxPoints bounds the points of one line, so the PNG stays small (well
// under 200 KB) and the data kept for it bounded, whatever the number of
// requests.
const maxPoints = 300

// cumulative is each worker's cumulative picks at evenly spaced picks: at
// most 2·maxPoints rows whatever the number of picks, since when it is
// full every other row goes and the spacing doubles. Row k is taken at
// pick (k+1)·step.
type cumulative struct {
	step, t int
	count   []int
	rows    []cumRow
}

type cumRow struct {
	t     int   // picks so far
	count []int // per worker index
}

func (c *cumulative) add(i int) {
	for i >= len(c.count) {
		c.count = append(c.count, 0)
	}
	if i >= 0 {
		c.count[i]++
	}
	c.t++
	c.step = max(c.step, 1)
	if c.t%c.step != 0 {
		return
	}
	if len(c.rows) == 2*maxPoints {
		kept := c.rows[:0]
		for k := 1; k < len(c.rows); k += 2 {
			kept = append(kept, c.rows[k])
		}
		c.rows, c.step = kept, 2*c.step
		if c.t%c.step != 0 {
			return
		}
	}
	c.rows = append(c.rows, cumRow{t: c.t, count: slices.Clone(c.count)})
}

// final is the rows with the last pick's, so the lines end where the run
// did (an interrupted one too).
func (c *cumulative) final() []cumRow {
	if c.t > 0 && (len(c.rows) == 0 || c.rows[len(c.rows)-1].t != c.t) {
		return append(c.rows, cumRow{t: c.t, count: slices.Clone(c.count)})
	}
	return c.rows
}

// plotRun writes a PNG to path: on top, each worker's cumulative picks
// against its ideal line t·w_i/W (the lua-resty-balancer WRR issue's graph: a flat stretch is a
// worker starved, a steady gap is a share off its weight); below, if there
// are samples, each worker's pending over time (Pike's picture of balance).
// It uses gonum/plot, which renders offline with its embedded fonts. The
// image goes to a temporary file beside path, renamed over it once
// complete, so a failed write never leaves half a PNG under that name.
func plotRun(path string, weights []int, cum *cumulative, samples []sample) error {
	top, err := cumulativePlot(weights, cum.final())
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
	f, err := os.CreateTemp(filepath.Dir(path), ".balancer-plot-*.png")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename, a no-op
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	// CreateTemp makes the file 0600; a plot is not secret.
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// checkPlotPath refuses, before any work, a -plot path the run could not
// write: its directory must exist and take a new file, and the path
// itself must not be a directory or a file we may not replace.
func checkPlotPath(path string) error {
	if path == "" {
		return nil
	}
	dir := filepath.Dir(path)
	switch st, err := os.Stat(dir); {
	case err != nil:
		return fmt.Errorf("-plot %s: directory %s does not exist", path, dir)
	case !st.IsDir():
		return fmt.Errorf("-plot %s: %s is not a directory", path, dir)
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("-plot %s: not a regular file", path)
	}
	f, err := os.CreateTemp(dir, ".balancer-plot-*.png")
	if err != nil {
		return fmt.Errorf("-plot %s: cannot write in %s", path, dir)
	}
	f.Close()
	return os.Remove(f.Name())
}

func cumulativePlot(weights []int, rows []cumRow) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "cumulative picks per worker (dashed: ideal t·w/W)"
	p.X.Label.Text = "pick t"
	p.Y.Label.Text = "picks"
	n := len(weights)
	if len(rows) > 0 {
		n = max(n, len(rows[len(rows)-1].count))
	}
	lines := make([]plotter.XYs, n)
	for _, r := range rows {
		for k := range lines {
			y := 0
			if k < len(r.count) {
				y = r.count[k]
			}
			lines[k] = append(lines[k], plotter.XY{X: float64(r.t), Y: float64(y)})
		}
	}
	T := 0.0
	if len(rows) > 0 {
		T = float64(rows[len(rows)-1].t)
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
