package balancerview_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gobalancer/balancer/balancerview"
	"github.com/gobalancer/balancer/dispatcher"
)

// member is what control can change of a worker.
type member struct {
	Weight  int
	Removed bool
}

// members is every worker of d, as control sees them.
func members(d *dispatcher.Dispatcher) []member {
	var ms []member
	for _, w := range d.Stats().Workers {
		ms = append(ms, member{w.Weight, w.Removed})
	}
	return ms
}

// do sends a request with no body and returns its status and body.
func do(t testing.TB, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// A control body that leaves out a field its op needs, repeats a key, has
// a field of no request or of the wrong type, or anything after the
// object, is refused with 400 and a message that says why, and changes
// nothing. Worker 1 has weight 2 and most bodies would set a weight 0:
// any of them applied, even in part, would show.
func TestControlRefusesIncompleteOrAmbiguousBodies(t *testing.T) {
	v := balancerview.New()
	defer v.Close()
	d := newDispatcher(t, 3)
	require.NoError(t, d.SetWeight(1, 2))
	require.NoError(t, v.Register("main", d))
	url := serve(t, v.Handler(balancerview.AllowControl())) + "control/main"
	before := members(d)
	require.Equal(t, []member{{1, false}, {2, false}, {1, false}}, before)

	for _, c := range []struct{ body, why string }{
		// A field the op needs is absent: not 0.
		{`{"Op":"weight","Worker":1}`, `"weight" needs Worker and Weight; missing: Weight`},
		{`{"Op":"weight","Weight":0}`, `"weight" needs Worker and Weight; missing: Worker`},
		{`{"Op":"weight"}`, `"weight" needs Worker and Weight; missing: Worker, Weight`},
		{`{"Op":"weight","Worker":1,"Weight":null}`, `"weight" needs Worker and Weight; missing: Weight`},
		{`{"Op":"resize"}`, `"resize" needs Workers; missing: Workers`},
		{`{"Op":"resize","Worker":1,"Weight":0}`, `"resize" needs Workers; missing: Workers`},
		{`{"Worker":1,"Weight":0}`, "missing Op"},
		{`{"Op":"","Worker":1,"Weight":0}`, `the op must be "weight" or "resize"`},
		// A key twice, whatever its case (encoding/json matches either).
		{`{"Op":"weight","Worker":1,"Worker":2,"Weight":3}`, "field Worker given twice"},
		{`{"Op":"weight","Worker":1,"worker":2,"Weight":3}`, "field Worker given twice"},
		{`{"Op":"resize","Workers":2,"Op":"weight","Worker":1,"Weight":0}`, "field Op given twice"},
		// A field of no request.
		{`{"Op":"weight","Worker":1,"Weight":0,"Force":true}`, `unknown field "Force"`},
		// More than the object.
		{`{"Op":"weight","Worker":1,"Weight":0}{"Op":"resize","Workers":1}`, "data after the JSON object"},
		{`{"Op":"weight","Worker":1,"Weight":0} x`, "data after the JSON object"},
		// Wrong types.
		{`{"Op":"weight","Worker":"1","Weight":0}`, "Worker: want int, not a JSON string"},
		{`{"Op":"weight","Worker":1,"Weight":0.5}`, "Weight: want int, not a JSON number 0.5"},
		{`{"Op":"weight","Worker":1,"Weight":1e40}`, "Weight: want int"},
		{`{"Op":["weight"],"Worker":1,"Weight":0}`, "Op: want string, not a JSON array"},
		{`["weight",1,0]`, "the body must be a JSON object"},
		{`null`, "the body must be a JSON object"},
		{``, "the body must be a JSON object"},
		// Not JSON.
		{`{"Op":"weight","Worker":1,"Weight":0`, "unexpected EOF"},
		{`{"Op":"weight","Worker":1,"Weight":`, "unexpected EOF"},
		{`{"Op":"weight","Worker":1,"Weight":0,}`, "invalid character"},
	} {
		code, msg := post(t, url, "application/json", c.body)
		assert.Equal(t, http.StatusBadRequest, code, "%s: %s", c.body, msg)
		assert.Contains(t, msg, "control: "+c.why, c.body)
		assert.Equal(t, before, members(d), "nothing changed by %s", c.body)
	}
}

// Complete bodies still apply: a weight of 0 given is one (it drains the
// worker), keys match whatever their case as encoding/json has them, the
// other op's fields are ignored (so a marshalled ControlRequest is a
// body), and white space may follow the object.
func TestControlAppliesCompleteBodies(t *testing.T) {
	v := balancerview.New()
	defer v.Close()
	d := newDispatcher(t, 3)
	require.NoError(t, v.Register("main", d))
	url := serve(t, v.Handler(balancerview.AllowControl())) + "control/main"
	marshal := func(r balancerview.ControlRequest) string {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		return string(b)
	}

	for _, c := range []struct {
		body string
		want []member
	}{
		{`{"Op":"weight","Worker":1,"Weight":0}`, []member{{1, false}, {0, false}, {1, false}}},
		{"{\"op\":\"weight\",\"worker\":2,\"WEIGHT\":4}\n", []member{{1, false}, {0, false}, {4, false}}},
		{marshal(balancerview.ControlRequest{Op: "weight", Worker: 0, Weight: 3}), []member{{3, false}, {0, false}, {4, false}}},
		{marshal(balancerview.ControlRequest{Op: "resize", Workers: 2}), []member{{3, false}, {0, false}, {4, true}}},
	} {
		code, msg := post(t, url, "application/json", c.body)
		require.Equal(t, http.StatusNoContent, code, "%s: %s", c.body, msg)
		assert.Equal(t, c.want, members(d), c.body)
	}
}

// A closed view answers 503 on every path, control included, and a
// control request then changes nothing.
func TestClosedViewAnswers503(t *testing.T) {
	v := balancerview.New()
	d := newDispatcher(t, 2)
	require.NoError(t, v.Register("main", d))
	base := serve(t, v.Handler(balancerview.AllowControl()))
	ro := serve(t, v.Handler())
	for _, path := range []string{"", "view.js", "view.css", "api", "api/main"} {
		code, _ := get(t, base+path)
		require.Equal(t, http.StatusOK, code, "open: %s", path)
	}
	before := members(d)
	v.Close()

	for _, path := range []string{"", "?name=main", "view.js", "view.css", "api", "api/main", "api/", "nope", "control/main"} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			code, body := do(t, method, base+path)
			assert.Equal(t, http.StatusServiceUnavailable, code, "%s %s", method, path)
			if method == http.MethodGet {
				assert.Equal(t, balancerview.ErrClosed.Error()+"\n", body, path)
			}
		}
	}
	for _, u := range []string{base, ro} {
		code, body := post(t, u+"control/main", "application/json", `{"Op":"weight","Worker":0,"Weight":0}`)
		assert.Equal(t, http.StatusServiceUnavailable, code, "%s: %s", u, body)
	}
	code, _ := post(t, base+"api/main", "application/json", `{}`)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, before, members(d), "nothing changed")
}

// Under api/ every last element is a dispatcher's name: empty or unknown
// is 404, never the page or an asset; a dispatcher may even be named
// view.js. Asset names other than the page's two are 404 too.
func TestEmptyOrUnknownNamesAre404(t *testing.T) {
	v := balancerview.New()
	defer v.Close()
	require.NoError(t, v.Register("main", newDispatcher(t, 1)))
	require.NoError(t, v.Register("view.js", newDispatcher(t, 1)))
	base := serve(t, v.Handler())

	for _, path := range []string{"api/", "api/?after=1", "api/view.css", "api/nope", "api/%20",
		"view.jsx", "index.html", "static/index.html", "static/view.jsx"} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			code, body := do(t, method, base+path)
			assert.Equal(t, http.StatusNotFound, code, "%s %s", method, path)
			assert.NotContains(t, body, "<title>", "%s %s", method, path)
		}
	}
	assert.Equal(t, "view.js", sample(t, base+"api/view.js").Name, "a name, not the script")
	assert.Equal(t, "main", sample(t, base+"api/main").Name)
	code, body := get(t, base+"view.js")
	assert.Equal(t, http.StatusOK, code)
	assert.True(t, strings.HasPrefix(body, "// The balancer view"), "the script itself")
}
