// The balancer view: polls api/NAME?after=SEQ and draws what it gets.
// Everything is built with DOM calls and textContent: names are never HTML.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const SVG = "http://www.w3.org/2000/svg";
  const st = { name: "", seq: 0, points: [], interval: 500, history: 300000, timer: 0, updates: 0 };

  function fmtInt(n) { return Math.round(n).toLocaleString("en-US"); }
  function fmtNum(x, d) { return Number.isFinite(x) ? x.toFixed(d) : "–"; }
  function fmtDur(ns) {
    if (!ns) return "–";
    if (ns < 1e3) return ns + " ns";
    if (ns < 1e6) return (ns / 1e3).toFixed(1) + " µs";
    if (ns < 1e9) return (ns / 1e6).toFixed(1) + " ms";
    return (ns / 1e9).toFixed(2) + " s";
  }
  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function row(cells, attrs) {
    const tr = el("tr");
    for (const c of cells) {
      if (c instanceof Node) { const td = el("td"); td.appendChild(c); tr.appendChild(td); }
      else if (Array.isArray(c)) tr.appendChild(el("td", c[0], c[1]));
      else tr.appendChild(el("td", c));
    }
    if (attrs) for (const k in attrs) tr.setAttribute(k, attrs[k]);
    return tr;
  }
  function fill(tbody, rows) { tbody.replaceChildren(...rows); }

  // spark draws series [[t, v], ...] into svg over the last st.history ms.
  function spark(svg, series, w, h, floor) {
    svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
    svg.setAttribute("preserveAspectRatio", "none");
    // The x axis spans the samples kept, from 10 s up to the view's window.
    const now = st.points.length ? st.points[st.points.length - 1].Time : Date.now();
    const first = st.points.length ? st.points[0].Time : now;
    const span = Math.min(Math.max(now - first, 10000), st.history);
    const from = now - span;
    let max = floor || 1;
    for (const [, v] of series) if (v > max) max = v;
    const pts = series.filter(([t]) => t >= from)
      .map(([t, v]) => `${((t - from) / span * w).toFixed(1)},${(h - 1 - v / max * (h - 3)).toFixed(1)}`);
    const axis = document.createElementNS(SVG, "line");
    axis.setAttribute("class", "axis");
    axis.setAttribute("x1", 0); axis.setAttribute("x2", w);
    axis.setAttribute("y1", h - 0.5); axis.setAttribute("y2", h - 0.5);
    const line = document.createElementNS(SVG, "polyline");
    line.setAttribute("points", pts.join(" "));
    const title = document.createElementNS(SVG, "title");
    title.textContent = "max " + fmtNum(max, max < 10 ? 1 : 0);
    svg.replaceChildren(axis, line, title);
  }

  function cards(s) {
    const S = s.Stats;
    const list = [
      ["completed", fmtInt(S.Completed), "completed"],
      ["per second", fmtInt(s.Rate), "rate"],
      ["dispatched", fmtInt(S.Dispatched)],
      ["pending at workers", fmtInt(S.Pending)],
      ["queued", fmtInt(S.Queued), "queued"],
      ["blocked submitters", fmtInt(S.Blocked)],
      ["held", S.Held ? "yes" : "no"],
      ["stalls", fmtInt(S.Stalls)],
      ["panics", fmtInt(S.Panics), "panics", S.Panics > 0],
      ["goexits", fmtInt(S.Goexits), "goexits", S.Goexits > 0],
      ["canceled", fmtInt(S.Canceled), "canceled"],
      ["replaced", fmtInt(S.Replaced)],
      ["pending mean ± sd", fmtNum(S.PendingMean, 2) + " ± " + fmtNum(S.PendingStdDev, 2)],
      ["run mean ± sd", fmtNum(S.RunPendingMean, 2) + " ± " + fmtNum(S.RunPendingStdDev, 2)],
    ];
    fill($("totals"), list.map(([k, v, id, warn]) => {
      const c = el("div", undefined, "card" + (warn ? " warn" : ""));
      c.appendChild(el("div", k, "k"));
      const val = el("div", v, "v");
      if (id) val.id = "total-" + id;
      c.appendChild(val);
      return c;
    }));
  }

  function workers(s) {
    const tb = $("workers").tBodies[0];
    // One scale for every worker's sparkline, so that they compare.
    let top = 1;
    for (const p of st.points) for (const v of p.Pending) if (v > top) top = v;
    fill(tb, s.Workers.map((w) => {
      const svg = document.createElementNS(SVG, "svg");
      svg.setAttribute("class", "spark");
      spark(svg, st.points.filter((p) => w.Index < p.Pending.length).map((p) => [p.Time, p.Pending[w.Index]]), 180, 22, top);
      const bar = el("span", undefined, "bar");
      const fillBar = el("i");
      fillBar.style.width = (100 * w.Busy).toFixed(0) + "%";
      bar.appendChild(fillBar);
      const busy = el("span");
      busy.append(bar, fmtNum(100 * w.Busy, 0) + "%");
      const lagCls = w.Lag > 0.5 ? "lag-pos" : w.Lag < -0.5 ? "lag-neg" : "";
      return row([
        String(w.Index), fmtInt(w.Weight), w.Removed ? "removed" : fmtNum(100 * w.Share, 1) + "%",
        [fmtInt(w.Picks), "picks"], [(w.Lag > 0 ? "+" : "") + fmtNum(w.Lag, 1), "lag " + lagCls],
        [fmtInt(w.Pending), "pending"], svg, [fmtInt(w.Completed), "completed"], [fmtInt(w.Rate), "rate"], busy,
      ], { "data-worker": w.Index, class: w.Removed ? "removed" : "" });
    }));
  }

  function flows(id, lines, keep) {
    fill($(id).tBodies[0], lines.filter(keep).map((f) => row([
      f.Name, fmtInt(f.Queued), fmtInt(f.Running), [fmtInt(f.Completed), "completed"], fmtInt(f.Refused),
      fmtDur(f.Wait.P50), fmtDur(f.Wait.P99),
    ], { "data-name": f.Name })));
  }

  function render(s) {
    $("seq").textContent = s.Seq;
    $("interval").textContent = fmtDur(s.Interval);
    const n = st.points.length;
    const span = n ? Math.min(Math.max(st.points[n - 1].Time - st.points[0].Time, 10000), st.history) : 10000;
    $("span").textContent = span < 120000 ? Math.round(span / 1000) + " s" : Math.round(span / 60000) + " min";
    cards(s);
    const rates = [];
    for (let i = 1; i < st.points.length; i++) {
      const a = st.points[i - 1], b = st.points[i];
      if (b.Time > a.Time && b.Completed >= a.Completed) rates.push([b.Time, (b.Completed - a.Completed) * 1000 / (b.Time - a.Time)]);
    }
    spark($("rate"), rates, 400, 60);
    spark($("queued"), st.points.map((p) => [p.Time, p.Queued]), 400, 60);
    workers(s);
    const L = s.Stats.Latency;
    fill($("latency").tBodies[0], [row([fmtInt(L.Samples), L.Samples ? fmtDur(Math.round(L.Sum / L.Samples)) : "–",
      fmtDur(L.P50), fmtDur(L.P90), fmtDur(L.P99), fmtDur(L.P999), fmtDur(L.Max)])]);
    flows("tenants", s.Stats.Tenants || [], () => true);
    flows("classes", s.Stats.Classes || [], (f) => f.Name === "0" || f.Dispatched > 0 || f.Queued > 0 || f.Refused > 0);
    $("control").hidden = !s.Control;
  }

  async function poll() {
    clearTimeout(st.timer);
    const name = st.name;
    try {
      const r = await fetch("api/" + encodeURIComponent(name) + "?after=" + st.seq, { cache: "no-store" });
      if (!r.ok) throw new Error(r.status + " " + (await r.text()).trim());
      const s = await r.json();
      if (name !== st.name) return; // switched meanwhile
      st.interval = Math.min(Math.max(s.Interval / 1e6, 100), 1000);
      st.history = s.Window / 1e6;
      if (s.Seq < st.seq) st.points = []; // the view restarted
      for (const p of s.History) if (!st.points.length || p.Seq > st.points[st.points.length - 1].Seq) st.points.push(p);
      const last = st.points.length ? st.points[st.points.length - 1].Time : 0;
      while (st.points.length && st.points[0].Time < last - st.history) st.points.shift();
      st.seq = s.Seq;
      render(s);
      st.updates++;
      document.body.dataset.updates = st.updates;
      $("status").textContent = "live";
      $("status").className = "status live";
    } catch (e) {
      $("status").textContent = "error: " + e.message;
      $("status").className = "status error";
    }
    st.timer = setTimeout(poll, st.interval);
  }

  function select(name) {
    st.name = name; st.seq = 0; st.points = [];
    const u = new URL(location.href);
    u.searchParams.set("name", name);
    history.replaceState(null, "", u);
    poll();
  }

  async function control(body) {
    const r = await fetch("control/" + encodeURIComponent(st.name), {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    $("control-msg").textContent = r.ok ? "done" : (await r.text()).trim();
    poll();
  }

  async function start() {
    $("weight-form").addEventListener("submit", (e) => {
      e.preventDefault();
      control({ Op: "weight", Worker: +$("cw-worker").value, Weight: +$("cw-weight").value });
    });
    $("resize-form").addEventListener("submit", (e) => {
      e.preventDefault();
      control({ Op: "resize", Workers: +$("cr-workers").value });
    });
    let names = [];
    try {
      names = (await (await fetch("api", { cache: "no-store" })).json()).Names || [];
    } catch (e) { /* shown below */ }
    if (!names.length) {
      $("status").textContent = "no dispatcher registered";
      $("status").className = "status error";
      return;
    }
    const sel = $("name");
    sel.replaceChildren(...names.map((n) => { const o = el("option", n); o.value = n; return o; }));
    const want = new URLSearchParams(location.search).get("name");
    sel.value = names.includes(want) ? want : names[0];
    sel.addEventListener("change", () => select(sel.value));
    select(sel.value);
  }
  start();
})();
