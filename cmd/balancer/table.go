package main

// maxRows is the most rows a text table prints in full. A longer one (up
// to 65536 workers, 10^7 picks) shows its first and last maxRows/2 rows
// and its totals unless -all is given: a terminal full of rows hides the
// report, and the JSON is complete for scripts.
const maxRows = 32

// eachRow calls row for each of n rows to print, and gap once where rows
// are left out; it reports whether any were.
func eachRow(n int, all bool, row func(i int), gap func(omitted int)) bool {
	if all || n <= maxRows {
		for i := range n {
			row(i)
		}
		return false
	}
	half := maxRows / 2
	for i := range half {
		row(i)
	}
	gap(n - 2*half)
	for i := n - half; i < n; i++ {
		row(i)
	}
	return true
}
