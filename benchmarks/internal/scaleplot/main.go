// Command scaleplot turns the output of the dispatcher's scale benchmarks
// (BenchmarkScaleWorkers, BenchmarkScaleRequesters) into the tables and the
// plot of docs/performance.md: ns per task, the median over repeated runs,
// against the number of workers and of requesters, per engine and
// strategy.
//
//	go test -run '^$' -bench Scale -benchtime 20000x -count 3 ./dispatcher/ |
//		(cd benchmarks && go run ./internal/scaleplot -o ../docs/scale.png)
package main

import (
	"bufio"
	"flag"
	"fmt"
	"image/color"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// line matches one benchmark result, e.g.
// BenchmarkScaleWorkers/engine=rings/strategy=swrr/workers=8-2  20000  83.5 ns/op
var line = regexp.MustCompile(`^BenchmarkScale(Workers|Requesters)/engine=(\w+)/strategy=([\w-]+)/(?:workers|requesters)=(\d+)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op`)

// series is one curve: an axis, an engine and a strategy.
type series struct{ axis, engine, strategy string }

func main() {
	out := flag.String("o", "", "write the plot to this PNG file (the tables go to stdout either way)")
	flag.Parse()
	data, err := parse(os.Stdin)
	if err == nil && len(data) == 0 {
		err = fmt.Errorf("no BenchmarkScale results on stdin")
	}
	if err == nil {
		printTables(os.Stdout, data)
		if *out != "" {
			err = writePlot(*out, data)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scaleplot:", err)
		os.Exit(1)
	}
}

// parse reads benchmark output into every series' samples at each x.
func parse(r io.Reader) (map[series]map[int][]float64, error) {
	data := map[series]map[int][]float64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		x, _ := strconv.Atoi(m[4])
		ns, err := strconv.ParseFloat(m[5], 64)
		if err != nil {
			return nil, err
		}
		s := series{m[1], m[2], m[3]}
		if data[s] == nil {
			data[s] = map[int][]float64{}
		}
		data[s][x] = append(data[s][x], ns)
	}
	return data, sc.Err()
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if n := len(v); n%2 == 1 {
		return v[n/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// sortedSeries returns data's series of one axis in a stable order.
func sortedSeries(data map[series]map[int][]float64, axis string) []series {
	var ss []series
	for s := range data {
		if s.axis == axis {
			ss = append(ss, s)
		}
	}
	slices.SortFunc(ss, func(a, b series) int {
		if a.engine != b.engine {
			return compare(a.engine, b.engine)
		}
		return compare(a.strategy, b.strategy)
	})
	return ss
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func xs(points map[int][]float64) []int {
	var x []int
	for k := range points {
		x = append(x, k)
	}
	slices.Sort(x)
	return x
}

// printTables writes one markdown table per axis: a row per series, a
// column per x, medians in ns per task.
func printTables(w io.Writer, data map[series]map[int][]float64) {
	for _, axis := range []string{"Workers", "Requesters"} {
		ss := sortedSeries(data, axis)
		if len(ss) == 0 {
			continue
		}
		cols := xs(data[ss[0]])
		fmt.Fprintf(w, "\nns per task against %s (median)\n\n| engine | strategy |", lower(axis))
		for _, x := range cols {
			fmt.Fprintf(w, " %d |", x)
		}
		fmt.Fprint(w, "\n|---|---|")
		for range cols {
			fmt.Fprint(w, "---:|")
		}
		fmt.Fprintln(w)
		for _, s := range ss {
			fmt.Fprintf(w, "| %s | %s |", s.engine, s.strategy)
			for _, x := range cols {
				if v, ok := data[s][x]; ok {
					fmt.Fprintf(w, " %.0f |", median(v))
				} else {
					fmt.Fprint(w, " – |")
				}
			}
			fmt.Fprintln(w)
		}
	}
}

func lower(axis string) string {
	if axis == "Workers" {
		return "workers"
	}
	return "requesters"
}

// writePlot draws both axes side by side, log-log, a line per series.
func writePlot(path string, data map[series]map[int][]float64) error {
	var plots []*plot.Plot
	for _, axis := range []string{"Workers", "Requesters"} {
		ss := sortedSeries(data, axis)
		if len(ss) == 0 {
			continue
		}
		p := plot.New()
		p.Title.Text = "ns per task against " + lower(axis)
		p.X.Label.Text = lower(axis) + " (log)"
		p.Y.Label.Text = "ns per task (log)"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{}, plot.LogTicks{}
		p.Legend.Top = true
		for k, s := range ss {
			var pts plotter.XYs
			for _, x := range xs(data[s]) {
				pts = append(pts, plotter.XY{X: float64(x), Y: median(data[s][x])})
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			l.Color = plotutil.Color(k)
			if s.engine == "channels" {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			}
			l.Width = vg.Points(1.5)
			p.Add(l)
			p.Legend.Add(s.engine+" "+s.strategy, l)
		}
		p.BackgroundColor = color.White
		plots = append(plots, p)
	}
	img := vgimg.New(vg.Points(420*float64(len(plots))), vg.Points(340))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Points(12),
		PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	row := [][]*plot.Plot{plots}
	cv := plot.Align(row, tiles, dc)
	for i := range plots {
		plots[i].Draw(cv[0][i])
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
