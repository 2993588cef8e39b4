// Command ratios reads `go test -bench` output of the benchmarks module
// (several rounds) and prints Markdown tables of the medians per
// implementation and their ratios to pond and to the plain channel pool.
// benchstat gives confidence intervals; this gives the table the docs show.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// metrics shown, in order; others are ignored.
var metrics = []string{"ns/op", "cpu-ns/op", "p99.9-cycle-us", "p99-us", "p50-us", "max-cycle-us", "allocs/op"}

// key is one benchmark case (the name without impl= and -procs) and metric.
type key struct{ bench, metric string }

func main() {
	vals, impls, cases := parse(os.Stdin)
	for _, ref := range []string{"", "pond", "chanpool"} {
		title := "Medians"
		if ref != "" {
			title = "Ratio to " + ref + " (lower is better)"
		}
		fmt.Printf("\n%s\n\n| case | metric | %s |\n|---|---|%s\n", title, strings.Join(impls, " | "), strings.Repeat("---|", len(impls)))
		for _, k := range cases {
			base := median(vals[k][ref])
			if ref != "" && base == 0 {
				continue
			}
			row := make([]string, len(impls))
			for i, im := range impls {
				m := median(vals[k][im])
				switch {
				case len(vals[k][im]) == 0:
					row[i] = "–"
				case ref == "":
					row[i] = format(m)
				default:
					row[i] = fmt.Sprintf("%.2f×", m/base)
				}
			}
			fmt.Printf("| %s | %s | %s |\n", k.bench, k.metric, strings.Join(row, " | "))
		}
	}
}

// parse returns the values per case and impl, and the impls and cases in
// first-seen order (impls sorted with ours first).
func parse(r io.Reader) (map[key]map[string][]float64, []string, []key) {
	vals := map[key]map[string][]float64{}
	var impls []string
	var cases []key
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		bench, impl := split(f[0])
		if impl == "" {
			continue
		}
		if !slices.Contains(impls, impl) {
			impls = append(impls, impl)
		}
		for i := 2; i+1 < len(f); i += 2 {
			if !slices.Contains(metrics, f[i+1]) {
				continue
			}
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			k := key{bench, f[i+1]}
			if vals[k] == nil {
				vals[k] = map[string][]float64{}
				cases = append(cases, k)
			}
			vals[k][impl] = append(vals[k][impl], v)
		}
	}
	slices.SortStableFunc(impls, func(a, b string) int {
		return rank(a) - rank(b)
	})
	slices.SortStableFunc(cases, func(a, b key) int {
		if c := strings.Compare(a.bench, b.bench); c != 0 {
			return c
		}
		return slices.Index(metrics, a.metric) - slices.Index(metrics, b.metric)
	})
	return vals, impls, cases
}

// ranked come first, in this order: ours on both engines, the two
// references of the ratio tables, then the textbook design ours starts from.
var ranked = []string{"balancer", "balancer-channels", "pond", "chanpool", "pike"}

func rank(impl string) int {
	if i := slices.Index(ranked, impl); i >= 0 {
		return i
	}
	return len(ranked)
}

// split turns "BenchmarkBatch/impl=pond/kind=empty-2" into
// ("Batch/kind=empty", "pond").
func split(name string) (bench, impl string) {
	name = strings.TrimPrefix(name, "Benchmark")
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	var parts []string
	for _, p := range strings.Split(name, "/") {
		if v, ok := strings.CutPrefix(p, "impl="); ok {
			impl = v
			continue
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "/"), impl
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// format prints a median with three significant digits, without exponents.
func format(v float64) string {
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
