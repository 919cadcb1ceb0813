// cprof's live charts: polls data?since=UNIX_MS (the metrics ring as JSON,
// see doc/endpoints.md, "Charts data and /metrics") once an interval and draws a chart per group of
// figures with Chart.js. The JSON:
//   {"interval_ms": 1000, "window_s": 600, "start_ms": UNIX_MS,
//    "t": [UNIX_MS, ...], "series": {"rss_bytes": [...], ...}}
// t and every series are as long as each other, oldest first; an entry may
// be null (a figure the system did not give). With since, only the points
// after it. At a process tree's owner (a forking server) the JSON also has
//   "tree": {"owner": PID, "t": [...], "totals": {"processes": [...],
//            "cpu_cores": [...], "rss_bytes": [...], "threads": [...]},
//            "processes": [{"pid": N, "name": "...", "cpu_cores": [...],
//                           "rss_bytes": [...], "threads": [...]}, ...]}
// and the page shows a "Process tree" section first: a chart per figure,
// the tree's total and a line per process. Everything shown is set as
// text, never as markup.
(function () {
  "use strict";

  // The groups: a chart each, its unit and its series (JSON key, label).
  const GROUPS = [
    {id: "cpu", title: "CPU", unit: "pct",
     series: [["cpu_user_pct", "user"], ["cpu_system_pct", "system"]]},
    {id: "memory", title: "Memory", unit: "bytes",
     series: [["rss_bytes", "RSS"], ["rss_peak_bytes", "peak RSS"], ["heap_inuse_bytes", "heap in use"]]},
    {id: "vm", title: "Virtual memory", unit: "bytes", series: [["vm_bytes", "virtual"]]},
    {id: "alloc", title: "Allocation rate", unit: "bytes_s", series: [["alloc_bytes_per_s", "allocated"]]},
    {id: "threads", title: "Threads and open files", unit: "count",
     series: [["threads", "threads"], ["open_fds", "open fds"]]},
    {id: "ctx", title: "Context switches", unit: "per_s",
     series: [["ctx_voluntary_per_s", "voluntary"], ["ctx_involuntary_per_s", "involuntary"]]},
    {id: "faults", title: "Page faults", unit: "per_s",
     series: [["faults_minor_per_s", "minor"], ["faults_major_per_s", "major"]]},
    {id: "io", title: "I/O", unit: "bytes_s",
     series: [["read_bytes_per_s", "read"], ["write_bytes_per_s", "written"]]},
    {id: "cprof_samples", title: "cprof: samples", unit: "per_s",
     series: [["cprof_samples_per_s", "taken"], ["cprof_dropped_per_s", "dropped"]]},
    {id: "cprof_memory", title: "cprof: own memory", unit: "bytes", series: [["cprof_memory_bytes", "memory"]]},
    {id: "cprof_serve", title: "cprof: time serving", unit: "ms_s", series: [["cprof_serve_ms_per_s", "serving"]]},
  ];
  const COLOURS = ["#2f6fd0", "#d9480f", "#2b8a3e", "#862e9c"];

  // The process tree's charts: the total, then a line per process (added
  // as processes appear, dropped once out of the ring).
  const TREE_GROUPS = [
    {id : "tree_cpu", title : "Process tree: CPU", unit : "cores", key : "cpu_cores"},
    {id : "tree_rss", title : "Process tree: resident memory", unit : "bytes", key : "rss_bytes"},
    {id : "tree_threads", title : "Process tree: threads", unit : "count", key : "threads"},
  ];

  // A colour per process, far apart for neighbours, stable for a pid's
  // place in the list.
  function processColour(i) { return "hsl(" + Math.round((i * 137.5 + 200) % 360) + ", 65%, 42%)"; }

  const state = {
    charts : {},             // group id -> Chart
    groups : GROUPS.slice(), // every group drawn: GROUPS, then TREE_GROUPS once there is a tree
    tree : null,             // the tree's section: {lastT, owner, processes: pid -> {name, colour}}
    nows : {},               // group id -> the title's current values
    lastT : null,            // the newest point's time, unix ms
    startMs : null,          // the process's start, to see it restart
    intervalMs : 1000,
    ringS : 600, // the ring's length, the longest window
    windowS : 300,
    updates : 0, // responses applied: the tests wait on it
    errors : [],
    timer : null,
    busy : false,
  };

  // ---- units ------------------------------------------------------------

  // 1024-based with pprof's names, as the profile viewer shows bytes.
  function bytes(v) {
    const units = ["B", "kB", "MB", "GB", "TB"];
    let i = 0, a = Math.abs(v);
    while (a >= 1024 && i < units.length - 1) {
      a /= 1024;
      v /= 1024;
      i++;
    }
    return num(v) + " " + units[i];
  }

  // Three significant digits, no exponent for what a process shows.
  function num(v) {
    const a = Math.abs(v);
    if (a === 0) return "0";
    if (a >= 100) return String(Math.round(v));
    if (a >= 10) return v.toFixed(1).replace(/\.0$/, "");
    if (a >= 1) return v.toFixed(2).replace(/\.?0+$/, "");
    return v.toPrecision(2).replace(/\.?0+$/, "");
  }

  function count(v) {
    const a = Math.abs(v);
    if (a >= 1e9) return num(v / 1e9) + "G";
    if (a >= 1e6) return num(v / 1e6) + "M";
    if (a >= 1e4) return num(v / 1e3) + "k";
    return num(v);
  }

  function format(unit, v) {
    if (v === null || v === undefined || Number.isNaN(v)) return "\u2013";
    switch (unit) {
      case "pct": return num(v) + " %";
      case "bytes": return bytes(v);
      case "bytes_s": return bytes(v) + "/s";
      case "per_s": return count(v) + "/s";
      case "ms_s": return num(v) + " ms/s";
      case "cores":
        return num(v) + (Math.abs(v) === 1 ? " core" : " cores");
      default: return count(v);
    }
  }

  function clock(ms) {
    const d = new Date(ms);
    const two = (n) => String(n).padStart(2, "0");
    return two(d.getHours()) + ":" + two(d.getMinutes()) + ":" + two(d.getSeconds());
  }

  // Tick spacing on the time axis: about six labels whatever the window.
  function step(windowS) {
    for (const s of [5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600])
      if (windowS / s <= 6) return s * 1000;
    return 3600 * 1000;
  }

  // Byte axes step in round binary amounts (256 kB, 2 MB), not in decimal
  // ones that read as 76.3 MB.
  function byteStep(scale) {
    const range = scale.max - scale.min;
    if (!(range > 0)) return;
    let unit = 1;
    while (unit * 1024 <= Math.max(Math.abs(scale.max), Math.abs(scale.min))) unit *= 1024;
    const raw = range / 5 / unit;
    const nice = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000]
      .find((n) => n >= raw) || 1000;
    scale.options.ticks.stepSize = nice * unit;
  }

  // Time ticks on round seconds or minutes of the clock, whatever the
  // window's ends: Chart.js would start them at the axis's minimum.
  function timeTicks(scale) {
    const s = step(state.windowS);
    const ticks = [];
    for (let v = Math.ceil(scale.min / s) * s; v <= scale.max; v += s) ticks.push({value: v});
    if (ticks.length) scale.ticks = ticks;
  }

  // ---- the page ----------------------------------------------------------

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function build() {
    const main = document.getElementById("charts");
    for (const g of GROUPS)
      addCard(main, g);
  }

  function addCard(parent, g) {
    const card = el("section", "card");
    card.id = "chart-" + g.id;
    const h2 = el("h2");
    h2.appendChild(el("span", "name", g.title));
    h2.appendChild(document.createTextNode(" "));
    const now = el("span", "value", "");
    h2.appendChild(now);
    card.appendChild(h2);
    const box = el("div", "box");
    const canvas = el("canvas");
    canvas.setAttribute("role", "img");
    canvas.setAttribute("aria-label", g.title);
    box.appendChild(canvas);
    card.appendChild(box);
    parent.appendChild(card);
    state.nows[g.id] = now;
    state.charts[g.id] = new Chart(canvas, config(g));
  }

  function config(g) {
    return {
      type : "line",
      data : {
        datasets :
            (g.series || [ [ "total", "total" ] ]).map(([ key, label ], i) => ({
                                                         key : key,
                                                         label : label,
                                                         data : [],
                                                         borderColor : COLOURS[i % COLOURS.length],
                                                         backgroundColor :
                                                             COLOURS[i % COLOURS.length],
                                                         borderWidth : 1.5,
                                                         pointRadius : 0,
                                                         pointHitRadius : 6,
                                                         tension : 0,
                                                         spanGaps : false,
                                                       })),
      },
      options : {
        animation : false,
        responsive : true,
        maintainAspectRatio : false,
        normalized : true,
        interaction : {mode : "index", intersect : false},
        plugins : {
          legend :
              {display : !g.series || g.series.length > 1, labels : {boxWidth : 12, boxHeight : 2}},
          tooltip : {
            callbacks : {
              title : (items) => items.length ? clock(items[0].parsed.x) : "",
              label : (item) => item.dataset.label + ": " + format(g.unit, item.parsed.y),
            },
          },
        },
        scales : {
          x : {
            type : "linear",
            afterBuildTicks : timeTicks,
            ticks : {
              callback : (v) => clock(v),
              stepSize : step(state.windowS),
              includeBounds : false,
              maxRotation : 0,
              autoSkipPadding : 12,
            },
          },
          y : {
            type : "linear",
            beginAtZero : true,
            suggestedMax : g.unit === "pct"     ? 1
                           : g.unit === "cores" ? 0.01
                                                : undefined,
            afterDataLimits : g.unit === "bytes" || g.unit === "bytes_s" ? byteStep : undefined,
            ticks : {callback : (v) => format(g.unit, v), maxTicksLimit : 6},
          },
        },
      },
    };
  }

  // ---- the data ----------------------------------------------------------

  function clear() {
    for (const id in state.charts)
      for (const ds of state.charts[id].data.datasets) ds.data = [];
    state.lastT = null;
    if (state.tree)
      state.tree.lastT = null;
  }

  function apply(d) {
    if (!d || !Array.isArray(d.t) || typeof d.series !== "object" || d.series === null)
      throw new Error("the data is not what the page expects");
    if (d.interval_ms > 0) state.intervalMs = d.interval_ms;
    if (d.window_s > 0 && d.window_s !== state.ringS) {
      state.ringS = d.window_s;
      windows();
    }
    // Another process (a restart) answers: start over.
    if (state.startMs !== null && d.start_ms !== state.startMs) clear();
    state.startMs = d.start_ms;
    let fresh = 0;
    for (let i = 0; i < d.t.length; i++) {
      const t = d.t[i];
      if (typeof t !== "number" || (state.lastT !== null && t <= state.lastT)) continue;
      fresh++;
      for (const g of GROUPS) {
        for (const ds of state.charts[g.id].data.datasets) {
          const col = d.series[ds.key];
          const v = Array.isArray(col) ? col[i] : null;
          ds.data.push({x: t, y: typeof v === "number" ? v : null});
        }
      }
      state.lastT = t;
    }
    if (d.tree && typeof d.tree === "object")
      applyTree(d.tree);
    // The ring's length and no more.
    if (state.lastT !== null) {
      const oldest = state.lastT - state.ringS * 1000;
      for (const id in state.charts)
        for (const ds of state.charts[id].data.datasets) {
          let k = 0;
          while (k < ds.data.length && ds.data[k].x < oldest) k++;
          if (k) ds.data.splice(0, k);
        }
      dropGone();
    }
    state.updates++;
    document.body.dataset.updates = String(state.updates);
    if (fresh || state.updates === 1) redraw();
    status(state.lastT === null ? "waiting for the first sample" :
           "updated " + clock(state.lastT) + ", every " + num(state.intervalMs / 1000) + " s", false);
  }

  function redraw() {
    for (const g of state.groups) {
      const chart = state.charts[g.id];
      const x = chart.options.scales.x;
      if (state.lastT !== null) {
        x.min = state.lastT - state.windowS * 1000;
        x.max = state.lastT;
      }
      x.ticks.stepSize = step(state.windowS);
      chart.update("none");
      // The newest value of each series, in the chart's title.
      // A tree's chart names its total alone: a title per process would
      // not fit.
      const shown = g.key ? chart.data.datasets.slice(0, 1) : chart.data.datasets;
      const parts = shown.map((ds) => {
        const last = ds.data.length ? ds.data[ds.data.length - 1].y : null;
        return (chart.data.datasets.length > 1 ? ds.label + " " : "") + format(g.unit, last);
      });
      state.nows[g.id].textContent = "\u2014 " + parts.join(", ");
    }
  }

  // ---- the process tree -----------------------------------------------------

  function buildTree(owner) {
    const main = document.getElementById("charts");
    const section = el("section", "group");
    section.id = "tree";
    const h = el("h2", "group-title", "Process tree");
    h.appendChild(el("span", "note",
                     " owner " + owner + ", " +
                         "a line per process"));
    section.appendChild(h);
    for (const g of TREE_GROUPS) {
      addCard(section, g);
      const total = state.charts[g.id].data.datasets[0];
      total.borderColor = total.backgroundColor = "#1d2433";
      total.borderWidth = 2.5;
    }
    const own = el("h2", "group-title", "This process");
    own.id = "own-title";
    main.insertBefore(own, main.firstChild);
    main.insertBefore(section, own);
    state.groups = TREE_GROUPS.concat(GROUPS);
    state.tree = {lastT : null, owner : owner, processes : {}, added : 0};
  }

  // The dataset of process pid in chart g, made when first seen.
  function processSet(g, pid) {
    const chart = state.charts[g.id];
    let ds = chart.data.datasets.find((x) => x.pid === pid);
    if (ds)
      return ds;
    const p = state.tree.processes[pid];
    ds = {
      key : g.key,
      pid : pid,
      label : pid + " " + p.name + (pid === state.tree.owner ? " (owner)" : ""),
      data : [],
      borderColor : p.colour,
      backgroundColor : p.colour,
      borderWidth : 1.2,
      pointRadius : 0,
      pointHitRadius : 6,
      tension : 0,
      spanGaps : false,
    };
    // Points before it came: none, so that its line starts where it did.
    chart.data.datasets.push(ds);
    return ds;
  }

  function applyTree(tr) {
    if (!Array.isArray(tr.t) || typeof tr.totals !== "object" || !Array.isArray(tr.processes))
      return;
    if (!state.tree)
      buildTree(tr.owner);
    for (const p of tr.processes) {
      if (!state.tree.processes[p.pid])
        state.tree.processes[p.pid] = {
          name : String(p.name),
          colour : processColour(state.tree.added++)
        };
    }
    for (let i = 0; i < tr.t.length; i++) {
      const t = tr.t[i];
      if (typeof t !== "number" || (state.tree.lastT !== null && t <= state.tree.lastT))
        continue;
      for (const g of TREE_GROUPS) {
        const col = tr.totals[g.key];
        const v = Array.isArray(col) ? col[i] : null;
        state.charts[g.id].data.datasets[0].data.push(
            {x : t, y : typeof v === "number" ? v : null});
        for (const p of tr.processes) {
          const pc = p[g.key];
          const pv = Array.isArray(pc) ? pc[i] : null;
          const ds = processSet(g, p.pid);
          // A process not there at this point: a gap, not a drop to zero.
          if (typeof pv === "number" || ds.data.length)
            ds.data.push({x : t, y : typeof pv === "number" ? pv : null});
        }
      }
      state.tree.lastT = t;
    }
  }

  // A process whose points have all left the ring leaves its charts.
  function dropGone() {
    if (!state.tree)
      return;
    for (const g of TREE_GROUPS) {
      const chart = state.charts[g.id];
      chart.data.datasets =
          chart.data.datasets.filter((ds, i) => i === 0 || ds.data.some((pt) => pt.y !== null));
    }
  }

  function status(text, error) {
    const s = document.getElementById("status");
    s.textContent = text;
    s.className = error ? "error" : "";
  }

  function poll() {
    // Called by the timer or when the page shows again: one loop at a time.
    if (state.timer !== null) clearTimeout(state.timer);
    state.timer = null;
    if (document.hidden || state.busy) return;
    state.busy = true;
    const url = "data" + (state.lastT !== null ? "?since=" + encodeURIComponent(state.lastT) : "");
    fetch(url, {cache: "no-store", credentials: "same-origin"})
      .then((r) => {
        if (!r.ok) throw new Error("data: HTTP " + r.status);
        return r.json();
      })
      .then(apply)
      .catch((e) => {
        state.errors.push(String(e && e.message ? e.message : e));
        status("cannot read the data (" + String(e && e.message ? e.message : e) + "); retrying", true);
      })
      .finally(() => {
        state.busy = false;
        schedule();
      });
  }

  function schedule() {
    if (state.timer === null && !document.hidden)
      state.timer = setTimeout(poll, Math.max(250, state.intervalMs));
  }

  // ---- the window --------------------------------------------------------

  function windows() {
    const sel = document.getElementById("window");
    const choices = [60, 300, state.ringS].filter((s, i, a) => s <= state.ringS && a.indexOf(s) === i);
    sel.textContent = "";
    for (const s of choices) {
      const o = el("option", "", s % 60 === 0 ? s / 60 + " min" : s + " s");
      o.value = String(s);
      sel.appendChild(o);
    }
    if (choices.indexOf(state.windowS) < 0)
      state.windowS = choices.filter((s) => s <= state.windowS).pop() || choices[0];
    sel.value = String(state.windowS);
  }

  function setWindow(s) {
    state.windowS = s;
    try {
      history.replaceState(null, "", "#window=" + s);
    } catch (e) {
      // A page opened from a file may not rewrite its address.
    }
    redraw();
  }

  function init() {
    const m = /window=(\d+)/.exec(location.hash);
    if (m) state.windowS = Number(m[1]);
    windows();
    document.getElementById("window").addEventListener("change", (e) => setWindow(Number(e.target.value)));
    document.addEventListener("securitypolicyviolation", (e) => state.errors.push("CSP: " + e.blockedURI));
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden) poll();
    });
    if (typeof Chart !== "function") {
      status("Chart.js did not load", true);
      return;
    }
    Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
    Chart.defaults.color = "#3b4252";
    build();
    poll();
  }

  // For the tests and the curious: the charts and what the page has seen.
  window.cprofCharts = {
    state : state,
    groups : GROUPS,
    treeGroups : TREE_GROUPS,
    format : format,
    setWindow : setWindow,
  };
  init();
})();
