// Package browsertest drives the balancerview page in headless Chromium
// (chromedp): it is its own module so that the root's go.mod never
// requires chromedp. The test needs /usr/bin/chromium (Debian's package
// chromium; .ci/run installs it) or the path in BALANCERVIEW_CHROMIUM, and
// fails without one. With BALANCERVIEW_SCREENSHOT=PATH it also writes a
// screenshot of the page to PATH (docs/view.png is one).
package browsertest
