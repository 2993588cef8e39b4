package balancerview

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

//go:embed static/index.html static/view.js static/view.css
var static embed.FS

// HandlerOption configures a handler.
type HandlerOption func(*handler)

// AllowControl lets the handler change the dispatchers: POST control/NAME
// with a JSON body {"Op":"weight","Worker":I,"Weight":W} calls
// SetWeight(I, W), {"Op":"resize","Workers":N} calls Resize(N). Without
// it, control/NAME answers 403 whatever the method; with it, methods other
// than POST get 405 and bodies that are not application/json 415 (a form
// on another site cannot send one without the browser asking first).
func AllowControl() HandlerOption { return func(h *handler) { h.control = true } }

// Handler serves Default; see View.Handler.
func Handler(opts ...HandlerOption) http.Handler { return Default.Handler(opts...) }

// Handler serves the view under whatever prefix it is mounted at (with a
// trailing slash, as in http.Handle("/debug/balancer/", h)); the page
// addresses everything relative to itself:
//
//	PREFIX              the page (GET)
//	PREFIX?name=NAME    the page, showing NAME first
//	PREFIX api          {"Names":[...]}
//	PREFIX api/NAME     NAME's Sample as JSON; ?after=SEQ sends only the
//	                    history after sample SEQ; 404 for an unknown NAME
//	PREFIX control/NAME POST only, with AllowControl only (see there)
//
// Reading api/NAME (or the page, which reads it) keeps NAME sampled for
// the view's idle time.
func (v *View) Handler(opts ...HandlerOption) http.Handler {
	h := &handler{v: v}
	for _, o := range opts {
		o(h)
	}
	return h
}

type handler struct {
	v       *View
	control bool
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	segs := strings.Split(r.URL.EscapedPath(), "/")
	last := segs[len(segs)-1]
	parent := ""
	if len(segs) > 1 {
		parent = segs[len(segs)-2]
	}
	switch {
	case parent == "control":
		h.serveControl(w, r, last)
		return
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "read-only: GET or HEAD", http.StatusMethodNotAllowed)
	case last == "":
		h.serveAsset(w, "static/index.html", "text/html; charset=utf-8")
	case last == "view.js":
		h.serveAsset(w, "static/view.js", "text/javascript; charset=utf-8")
	case last == "view.css":
		h.serveAsset(w, "static/view.css", "text/css; charset=utf-8")
	case last == "api":
		writeJSON(w, http.StatusOK, struct{ Names []string }{h.v.Names()})
	case parent == "api":
		h.serveSample(w, r, last)
	default:
		http.NotFound(w, r)
	}
}

func (h *handler) serveAsset(w http.ResponseWriter, name, ctype string) {
	b, err := static.ReadFile(name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", ctype)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	w.Write(b)
}

// name decodes an escaped path segment.
func name(seg string) (string, bool) {
	n, err := url.PathUnescape(seg)
	return n, err == nil && n != ""
}

func (h *handler) serveSample(w http.ResponseWriter, r *http.Request, seg string) {
	n, ok := name(seg)
	if !ok {
		http.NotFound(w, r)
		return
	}
	var after int64
	if a := r.URL.Query().Get("after"); a != "" {
		var err error
		if after, err = strconv.ParseInt(a, 10, 64); err != nil {
			http.Error(w, "after: want a sample number", http.StatusBadRequest)
			return
		}
	}
	now := time.Now()
	e, closed := h.v.poll(n, now)
	switch {
	case closed:
		http.Error(w, "balancerview: closed", http.StatusServiceUnavailable)
		return
	case e == nil:
		http.Error(w, fmt.Sprintf("no dispatcher named %q", n), http.StatusNotFound)
		return
	}
	// The first read has a sample at once; later ones get the sampler's.
	e.take(now, h.v.idle)
	s := e.sample(after)
	s.Interval, s.Window, s.Control = h.v.interval, h.v.history, h.control
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, &s)
}

// ControlRequest is the JSON body of a control request.
type ControlRequest struct {
	Op      string // "weight" or "resize"
	Worker  int    // weight: the worker's index
	Weight  int    // weight: its new weight
	Workers int    // resize: the live workers wanted
}

func (h *handler) serveControl(w http.ResponseWriter, r *http.Request, seg string) {
	if !h.control {
		http.Error(w, "control is not enabled (balancerview.AllowControl)", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "control: POST only", http.StatusMethodNotAllowed)
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		http.Error(w, "control: the body must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	n, ok := name(seg)
	if !ok {
		http.NotFound(w, r)
		return
	}
	h.v.mu.Lock()
	e := h.v.entries[n]
	h.v.mu.Unlock()
	if e == nil {
		http.Error(w, fmt.Sprintf("no dispatcher named %q", n), http.StatusNotFound)
		return
	}
	c, ok := e.src.(Controller)
	if !ok {
		http.Error(w, "control: this source has no SetWeight and Resize", http.StatusNotImplemented)
		return
	}
	var req ControlRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, "control: "+err.Error(), http.StatusBadRequest)
		return
	}
	var err error
	switch req.Op {
	case "weight":
		err = c.SetWeight(req.Worker, req.Weight)
	case "resize":
		err = c.Resize(req.Workers)
	default:
		err = errors.New(`the op must be "weight" or "resize"`)
	}
	if err != nil {
		http.Error(w, "control: "+err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
}
