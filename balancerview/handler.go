package balancerview

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
//
// A body that is not exactly one JSON object of ControlRequest's fields,
// each at most once, with the right types and every field its op needs,
// gets 400 and changes nothing: a missing Weight is not weight 0 (which
// would drain the worker), and of two Workers neither is guessed at.
func AllowControl() HandlerOption { return func(h *handler) { h.control = true } }

// Handler serves Default; see View.Handler.
func Handler(opts ...HandlerOption) http.Handler { return Default.Handler(opts...) }

// Handler serves the view under whatever prefix it is mounted at (with a
// trailing slash, as in http.Handle("/debug/balancer/", h)); the page
// addresses everything relative to itself:
//
//	PREFIX              the page (GET)
//	PREFIX?name=NAME    the page, showing NAME first
//	PREFIX view.js      the page's script and style sheet
//	PREFIX view.css
//	PREFIX api          {"Names":[...]}
//	PREFIX api/NAME     NAME's Sample as JSON; ?after=SEQ sends only the
//	                    history after sample SEQ; 404 for an unknown NAME
//	PREFIX control/NAME POST only, with AllowControl only (see there)
//
// Any other path gets 404: an empty or unknown NAME under api/ (api/ is
// not the page, api/view.js is the dispatcher named view.js), an unknown
// asset. It routes on the path's last two elements, so the prefix must
// not end in api/ or control/. Once the view is closed, every path gets
// 503.
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
	if h.v.isClosed() {
		// Before any route: a closed view shows nothing and changes nothing.
		http.Error(w, ErrClosed.Error(), http.StatusServiceUnavailable)
		return
	}
	parent, last := tail(r.URL.EscapedPath())
	if parent == "control" {
		h.serveControl(w, r, last)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "read-only: GET or HEAD", http.StatusMethodNotAllowed)
		return
	}
	// api/NAME first: a NAME that is empty or spells an asset is still a
	// dispatcher's name, never the page or its script.
	switch a, isAsset := assets[last]; {
	case parent == "api":
		h.serveSample(w, r, last)
	case last == "api":
		writeJSON(w, http.StatusOK, struct{ Names []string }{h.v.Names()})
	case isAsset:
		h.serveAsset(w, a)
	default:
		http.NotFound(w, r)
	}
}

// tail returns the last two elements of an escaped path: the handler
// does not know its prefix, and none of its routes is deeper.
func tail(path string) (parent, last string) {
	segs := strings.Split(path, "/")
	last = segs[len(segs)-1]
	if len(segs) > 1 {
		parent = segs[len(segs)-2]
	}
	return parent, last
}

// asset is an embedded file and its type.
type asset struct{ file, ctype string }

// assets are the files served, by the path's last element ("" is the
// page itself).
var assets = map[string]asset{
	"":         {"static/index.html", "text/html; charset=utf-8"},
	"view.js":  {"static/view.js", "text/javascript; charset=utf-8"},
	"view.css": {"static/view.css", "text/css; charset=utf-8"},
}

func (h *handler) serveAsset(w http.ResponseWriter, a asset) {
	b, err := static.ReadFile(a.file)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", a.ctype)
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
		http.Error(w, ErrClosed.Error(), http.StatusServiceUnavailable)
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

// ControlRequest is the JSON body of a control request. Every field its
// op uses is required (0 is a value, not a default); the other op's
// fields are ignored, so a marshalled ControlRequest is a valid body.
type ControlRequest struct {
	Op      string // "weight" or "resize"
	Worker  int    // weight: the worker's index
	Weight  int    // weight: its new weight
	Workers int    // resize: the live workers wanted
}

// controlBody is a ControlRequest as decoded: nil is a field that was
// absent (or null), which an int would turn into 0.
type controlBody struct {
	Op                      *string
	Worker, Weight, Workers *int
}

// controlFields are ControlRequest's JSON keys.
var controlFields = []string{"Op", "Worker", "Weight", "Workers"}

// errTrailing is a body with more than one JSON value.
var errTrailing = errors.New("data after the JSON object")

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
	req, err := readControl(http.MaxBytesReader(w, r.Body, 1<<10))
	if err == nil {
		err = apply(c, req)
	}
	if err != nil {
		http.Error(w, "control: "+err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// apply calls the method req names.
func apply(c Controller, req ControlRequest) error {
	if req.Op == "weight" {
		return c.SetWeight(req.Worker, req.Weight)
	}
	return c.Resize(req.Workers)
}

// readControl decodes a control body strictly: a request that is
// incomplete or ambiguous is refused, not guessed at.
func readControl(body io.Reader) (ControlRequest, error) {
	b, err := io.ReadAll(body)
	if err != nil {
		return ControlRequest{}, err
	}
	if err := checkKeys(b); err != nil {
		return ControlRequest{}, err
	}
	var cb controlBody
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // as checkKeys: in case their matching ever differs
	if err := dec.Decode(&cb); err != nil {
		return ControlRequest{}, typeError(err)
	}
	return cb.request()
}

// typeError names the field of the wrong type, in the body's terms
// rather than those of the decoder's Go struct.
func typeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("%s: want %s, not a JSON %s", te.Field, te.Type, te.Value)
	}
	return err
}

// checkKeys reports an error unless b is a single JSON object whose keys
// are ControlRequest's fields, each at most once. encoding/json would
// keep the last of duplicated keys, and it matches keys whatever their
// case, so "Worker" and "worker" are the same key here too.
func checkKeys(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("the body must be a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := t.(string) // Token fails on a key that is not a string
		f, ok := controlField(k)
		switch {
		case !ok:
			return fmt.Errorf("unknown field %q", k)
		case seen[f]:
			return fmt.Errorf("field %s given twice", f)
		}
		seen[f] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return unexpectedEOF(err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return unexpectedEOF(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errTrailing
	}
	return nil
}

// controlField is the field a key decodes into, as encoding/json matches
// it: case-insensitively.
func controlField(key string) (string, bool) {
	for _, f := range controlFields {
		if strings.EqualFold(key, f) {
			return f, true
		}
	}
	return "", false
}

// unexpectedEOF names a body that ends inside the object.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// request checks that every field the op needs is present.
func (cb controlBody) request() (ControlRequest, error) {
	if cb.Op == nil {
		return ControlRequest{}, errors.New(`missing Op: "weight" or "resize"`)
	}
	switch op := *cb.Op; op {
	case "weight":
		if err := need(op, field{"Worker", cb.Worker}, field{"Weight", cb.Weight}); err != nil {
			return ControlRequest{}, err
		}
		return ControlRequest{Op: op, Worker: *cb.Worker, Weight: *cb.Weight}, nil
	case "resize":
		if err := need(op, field{"Workers", cb.Workers}); err != nil {
			return ControlRequest{}, err
		}
		return ControlRequest{Op: op, Workers: *cb.Workers}, nil
	}
	return ControlRequest{}, errors.New(`the op must be "weight" or "resize"`)
}

// field is a decoded field and its name, for need.
type field struct {
	name string
	v    *int
}

// need returns an error naming the fields op needs and those absent.
func need(op string, fs ...field) error {
	var all, missing []string
	for _, f := range fs {
		all = append(all, f.name)
		if f.v == nil {
			missing = append(missing, f.name)
		}
	}
	if missing != nil {
		return fmt.Errorf("%q needs %s; missing: %s", op, strings.Join(all, " and "), strings.Join(missing, ", "))
	}
	return nil
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
