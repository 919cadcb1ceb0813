/* cprof's profile viewer: a flame graph (or icicle) on a canvas and a top
 * table, from one JSON object in the page. Plain JavaScript, no framework,
 * no build step, nothing fetched.
 *
 * The data, in <script type="application/json" id="profile-data">, as
 * src/ui/viewer.c writes it:
 *
 *   {"version": 1,
 *    "title": "...", "comments": ["..."],
 *    "types": [{"type": "inuse_space", "unit": "bytes"}, ...],
 *    "default": 3,                 the sample type shown first
 *    "diff": false,                true: values are NEW's then BASE's
 *    "time_nanos": 0, "duration_nanos": 0,
 *    "strings": ["", "main", "main.c", ...],
 *    "nodes": [parent, name, file, total[0..V), self[0..V), ...]}
 *
 * nodes is flat: node after node, each 3 + 2*V numbers, V = types.length
 * (twice that for a diff). name and file index strings. Node 0 is the root
 * (parent -1); nodes are in preorder, so a parent comes before its
 * children, siblings keep their order (heaviest first), and a node's
 * subtree is the run of nodes after it up to end[i].
 *
 * Diff mode: a frame's width is NEW + BASE, so that a function gone from
 * NEW still shows and children always fit in their parent (the larger of
 * the two would not add up); its colour is red where NEW grew and blue
 * where it shrank, deeper as the change (NEW - BASE) / max(NEW, BASE) nears
 * 100%. Values are compared as they are, not scaled to equal totals.
 *
 * Names are data: they reach the page only through textContent and canvas
 * fillText, never as markup. Control characters show escaped (\n, \x01).
 */
(function () {
  'use strict';

  var ROW = 18; // px per frame row
  var FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif';
  var MIN_WIDTH = 0.35; // px: thinner frames (and their callees) are not drawn
  var MAX_ROWS = 500; // table rows built at once

  var $ = function (id) { return document.getElementById(id); };

  function fail(msg) {
    var p = document.createElement('p');
    p.className = 'error';
    p.textContent = 'cprof viewer: ' + msg;
    document.body.insertBefore(p, document.body.firstChild);
    document.body.dataset.error = msg;
  }

  // The page holds its data (a file the cprof command wrote), or none: then
  // the program's own server sent it (/debug/pprof/ui/), and ui.js, its
  // picker, fetches profiles and calls window.cprofView(data) for each.
  // Each call draws into a fresh copy of the page's markup (ui.js puts it
  // back), after the previous view's page-wide listeners are taken off.
  // The picker may pass opts: opts.initial, a state to start from
  // ({type: a sample type's name, query, icicle}: what it read from the
  // page's address), and opts.onState(state), called with that state each
  // time it changes, so that the address can keep it.
  var embedded = $('profile-data').textContent;
  if (!/\S/.test(embedded)) {
    window.cprofView = view;
    return;
  }
  var parsed;
  try {
    parsed = JSON.parse(embedded);
  } catch (e) {
    fail('the profile data is not valid JSON (' + e.message + ')');
    return;
  }
  view(parsed);

  function view(data, opts) {
    opts = opts || {};
    if (window.cprofViewer && window.cprofViewer.destroy) window.cprofViewer.destroy();

    // ---- the tree, in typed arrays ------------------------------------------

    var strings = data.strings || [];
    var types = data.types || [];
    var nTypes = types.length;
    var diff = !!data.diff;
    var V = diff ? 2 * nTypes : nTypes;
    var stride = 3 + 2 * V;
    var raw = data.nodes || [];
    var N = Math.floor(raw.length / stride);
    if (N < 1 || nTypes < 1 || raw.length % stride !== 0) {
      fail('the profile has no call tree');
      return;
    }
    var parent = new Int32Array(N);
    var nameOf = new Int32Array(N);
    var fileOf = new Int32Array(N);
    var depth = new Int32Array(N);
    var end = new Int32Array(N); // one past the last node of i's subtree
    var total = new Float64Array(N * V);
    var self = new Float64Array(N * V);
    for (var i = 0, o = 0; i < N; i++, o += stride) {
      var p = raw[o];
      if (i === 0 ? p !== -1 : !(p >= 0 && p < i)) {
        fail('node ' + i + ' has a bad parent (' + p + ')');
        return;
      }
      parent[i] = p;
      nameOf[i] = raw[o + 1];
      fileOf[i] = raw[o + 2];
      depth[i] = i === 0 ? 0 : depth[p] + 1;
      end[i] = i + 1;
      for (var v = 0; v < V; v++) {
        total[i * V + v] = raw[o + 3 + v];
        self[i * V + v] = raw[o + 3 + V + v];
      }
    }
    raw = data.nodes = null; // let the parsed array go
    for (i = N - 1; i > 0; i--) if (end[i] > end[parent[i]]) end[parent[i]] = end[i];
    // Children as one array per node: preorder gives them in sibling order.
    var nChildren = new Int32Array(N + 1);
    for (i = 1; i < N; i++) nChildren[parent[i]]++;
    var firstChild = new Int32Array(N + 1);
    for (i = 0; i < N; i++) firstChild[i + 1] = firstChild[i] + nChildren[i];
    var childList = new Int32Array(Math.max(N - 1, 1));
    var fill = firstChild.slice(0, N);
    for (i = 1; i < N; i++) childList[fill[parent[i]]++] = i;

    // ---- how things read ----------------------------------------------------

    // A name as text: control characters escaped, as cprof prints them.
    function show(s) {
      return String(s).replace(/[\x00-\x1f\x7f]/g, function (c) {
        var k = { '\n': '\\n', '\t': '\\t', '\r': '\\r' }[c];
        return k || '\\x' + ('0' + c.charCodeAt(0).toString(16)).slice(-2);
      });
    }
    var shown = strings.map(show);
    function nodeName(i) { return i === 0 ? 'root' : shown[nameOf[i]] || '(unknown)'; }
    function nodeFile(i) { return shown[fileOf[i]] || ''; }

    // pprof's units (internal/measurement): memory in powers of 1024, time
    // scaled to the largest unit the value reaches, counts plain.
    var UNITS = {
      memory: {
        def: 'B',
        units: [['B', ['b', 'byte'], 1], ['kB', ['kb', 'kbyte', 'kilobyte'], 1024],
          ['MB', ['mb', 'mbyte', 'megabyte'], Math.pow(2, 20)], ['GB', ['gb', 'gbyte', 'gigabyte'], Math.pow(2, 30)],
          ['TB', ['tb', 'tbyte', 'terabyte'], Math.pow(2, 40)], ['PB', ['pb', 'pbyte', 'petabyte'], Math.pow(2, 50)]],
        defFactor: 1
      },
      time: {
        def: 's',
        units: [['ns', ['ns', 'nanosecond'], 1], ['us', ['\u03bcs', 'us', 'microsecond'], 1e3],
          ['ms', ['ms', 'millisecond'], 1e6], ['s', ['s', 'sec', 'second'], 1e9], ['hrs', ['hour', 'hr'], 3600e9]],
        defFactor: 1e9
      },
      gcu: {
        def: 'GCU',
        units: [['n*GCU', ['nanogcu'], 1e-9], ['u*GCU', ['microgcu'], 1e-6], ['m*GCU', ['milligcu'], 1e-3],
          ['GCU', ['gcu'], 1], ['k*GCU', ['kilogcu'], 1e3], ['M*GCU', ['megagcu'], 1e6],
          ['G*GCU', ['gigagcu'], 1e9], ['T*GCU', ['teragcu'], 1e12], ['P*GCU', ['petagcu'], 1e15]],
        defFactor: 1
      }
    };
    function sniff(kind, unit) {
      var u = unit.toLowerCase();
      if (u.length > 2 && u.charAt(u.length - 1) === 's') u = u.slice(0, -1);
      var us = UNITS[kind].units;
      for (var k = 0; k < us.length; k++) if (us[k][1].indexOf(u) >= 0) return us[k];
      return null;
    }
    // [scaled value, unit suffix], as measurement.Scale(v, unit, "auto").
    function scale(value, unit) {
      if (value < 0) {
        var r = scale(-value, unit);
        return [-r[0], r[1]];
      }
      var kinds = ['memory', 'time', 'gcu'];
      for (var k = 0; k < kinds.length; k++) {
        var from = sniff(kinds[k], unit);
        if (!from) continue;
        var x = value * from[2], f = 0, name = '';
        UNITS[kinds[k]].units.forEach(function (u) {
          if (u[2] >= f && x / u[2] >= 1) { f = u[2]; name = u[0]; }
        });
        if (f === 0) return [x / UNITS[kinds[k]].defFactor, UNITS[kinds[k]].def];
        return [x / f, name];
      }
      if (['count', 'sample', 'unit', 'minimum', 'auto', ''].indexOf(unit) >= 0) return [value, ''];
      return [value, unit];
    }
    // measurement.Label: two decimals, ".00" dropped, 0 without a unit.
    function label(value, unit) {
      var r = scale(value, unit);
      var s = r[0].toFixed(2).replace(/\.00$/, '');
      if (s === '0' || s === '-0') return '0';
      return s + r[1];
    }
    function signed(value, unit) { return (value > 0 ? '+' : '') + label(value, unit); }
    // Go's %.2g: two significant digits, trailing zeros dropped.
    function g2(x) {
      if (x === 0) return '0';
      var e = Math.floor(Math.log10(Math.abs(x)));
      if (e < -4) {
        var m = x.toExponential(1).split('e');
        var exp = parseInt(m[1], 10);
        return m[0].replace(/\.0$/, '') + 'e' + (exp < 0 ? '-' : '+') + ('0' + Math.abs(exp)).slice(-2);
      }
      var s = x.toPrecision(2);
      return s.indexOf('.') >= 0 ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
    }
    // measurement.Percentage, without its padding.
    function pct(value, whole) {
      var r = whole !== 0 ? Math.abs(value / whole) * 100 : 0;
      if (r >= 99.95 && r <= 100.05) return '100%';
      if (r >= 1) return r.toFixed(2) + '%';
      return g2(r) + '%';
    }

    // ---- state --------------------------------------------------------------

    var state = {
      type: data.default >= 0 && data.default < nTypes ? data.default : nTypes - 1,
      zoom: 0,
      icicle: false,
      query: '',
      selected: -1, // a string index: the function picked in the table
      sortKey: diff ? 'dcum' : 'flat',
      sortDesc: true
    };
    var initial = opts.initial || {};
    types.forEach(function (t, k) { if (initial.type && t.type === initial.type) state.type = k; });
    if (initial.query) state.query = String(initial.query);
    if (initial.icicle) state.icicle = true;
    var unit = function () { return types[state.type].unit || ''; };
    function val(i) { return total[i * V + state.type]; }
    function base(i) { return total[i * V + nTypes + state.type]; }
    function selfVal(i) { return self[i * V + state.type]; }
    function selfBase(i) { return self[i * V + nTypes + state.type]; }
    function weight(i) { return diff ? Math.abs(val(i)) + Math.abs(base(i)) : Math.abs(val(i)); }

    // ---- matching: the search box and the table's selection -----------------

    var nameMatch = null; // per string: matches the search
    var searchNote = '';
    function compileSearch() {
      var q = state.query;
      var input = $('search');
      input.classList.remove('bad');
      nameMatch = null;
      searchNote = '';
      if (!q) return;
      var test;
      try {
        var re = new RegExp(q);
        test = function (s) { return re.test(s); };
      } catch (e) {
        // Not a regular expression: plain text, and say so.
        test = function (s) { return s.indexOf(q) >= 0; };
        searchNote = ' (as text: ' + e.message + ')';
      }
      nameMatch = new Uint8Array(strings.length);
      for (var k = 0; k < strings.length; k++) nameMatch[k] = test(shown[k]) || test(strings[k]) ? 1 : 0;
    }
    function highlighted(i) {
      if (i === 0) return false;
      var n = nameOf[i];
      return (nameMatch !== null && nameMatch[n] === 1) || n === state.selected;
    }
    // The value in matched frames, each sample once: a matched frame's
    // subtree is skipped once counted.
    function matchedShare() {
      var sum = 0, sumBase = 0;
      for (var k = 1; k < N;) {
        if (highlighted(k)) {
          sum += val(k);
          if (diff) sumBase += base(k);
          k = end[k];
        } else {
          k++;
        }
      }
      return [sum, sumBase];
    }

    // ---- layout -------------------------------------------------------------

    var canvas = $('flame');
    var ctx = canvas.getContext('2d');
    var W = 0, H = 0, maxDepth = 0;
    // Frames drawn: node, x, width, depth, collapsed (an ancestor of the zoom).
    var rects = [];
    var byDepth = []; // per depth, indexes into rects, left to right

    function layout() {
      W = Math.max(1, Math.floor($('graph').clientWidth || canvas.clientWidth || 300));
      rects = [];
      byDepth = [];
      maxDepth = 0;
      function put(n, x, w, collapsed) {
        var d = depth[n];
        if (d > maxDepth) maxDepth = d;
        (byDepth[d] = byDepth[d] || []).push(rects.length);
        rects.push({ n: n, x: x, w: w, d: d, c: collapsed });
      }
      var chain = [];
      for (var a = parent[state.zoom]; a >= 0; a = parent[a]) chain.push(a);
      for (var k = chain.length - 1; k >= 0; k--) put(chain[k], 0, W, true);
      var wz = weight(state.zoom);
      var s = wz > 0 ? W / wz : 0;
      var stack = [state.zoom, 0, W];
      while (stack.length) {
        var width = stack.pop(), x = stack.pop(), n = stack.pop();
        put(n, x, width, false);
        // Children from the left; pushed in reverse so the first comes out first.
        var cx = x, kids = [];
        for (var c = firstChild[n]; c < firstChild[n + 1]; c++) {
          var ch = childList[c];
          var cw = Math.min(weight(ch) * s, x + width - cx);
          if (cw >= MIN_WIDTH) kids.push(ch, cx, cw);
          cx += Math.max(cw, 0);
        }
        for (var j = kids.length - 3; j >= 0; j -= 3) stack.push(kids[j], kids[j + 1], kids[j + 2]);
      }
      H = (maxDepth + 1) * ROW;
    }
    function rowY(d) { return state.icicle ? d * ROW : (maxDepth - d) * ROW; }

    // ---- colours ------------------------------------------------------------

    function hash(s) {
      var h = 2166136261;
      for (var k = 0; k < s.length; k++) h = Math.imul(h ^ s.charCodeAt(k), 16777619);
      return h >>> 0;
    }
    var warm = strings.map(function (s) {
      var h = hash(s);
      // flamegraph.pl's "hot" palette: reds to yellows, fixed per name.
      return 'hsl(' + (h % 50) + ',' + (72 + (h >>> 8) % 20) + '%,' + (56 + (h >>> 16) % 12) + '%)';
    });
    // [fill, text colour] of a frame.
    function colours(r) {
      var n = r.n;
      if (r.c) return ['#d4d8e0', '#1d2433'];
      if (highlighted(n)) return ['#c026d3', '#ffffff'];
      if (n === 0) return ['#9aa3b2', '#111111'];
      if (!diff) return [warm[nameOf[n]], '#111111'];
      var now = val(n), was = base(n);
      var big = Math.max(Math.abs(now), Math.abs(was));
      var rel = big > 0 ? (now - was) / big : 0;
      if (Math.abs(rel) < 0.01) return ['#e2e4e9', '#111111'];
      var t = 0.15 + 0.85 * Math.min(1, Math.abs(rel));
      var to = rel > 0 ? [214, 39, 40] : [31, 90, 214];
      var c = [0, 1, 2].map(function (k) { return Math.round(245 + (to[k] - 245) * t); });
      return ['rgb(' + c.join(',') + ')', t > 0.55 ? '#ffffff' : '#111111'];
    }

    // ---- drawing ------------------------------------------------------------

    var charWidth = 7;
    function fitText(s, room) {
      if (room < charWidth * 2) return '';
      var max = Math.floor(room / charWidth);
      var t = s.length > max ? s.slice(0, Math.max(1, max - 1)) + '\u2026' : s;
      while (t.length > 2 && ctx.measureText(t).width > room) t = t.slice(0, -2) + '\u2026';
      return t.length <= 1 && s.length > 1 ? '' : t;
    }

    function draw() {
      var dpr = window.devicePixelRatio || 1;
      canvas.width = Math.round(W * dpr);
      canvas.height = Math.round(H * dpr);
      canvas.style.height = H + 'px';
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, W, H);
      ctx.font = FONT;
      ctx.textBaseline = 'middle';
      var sample = 'abcdefghijklmnopqrstuvwxyz_ABCDEFGHIJ<>:';
      charWidth = ctx.measureText(sample).width / sample.length;
      var dim = nameMatch !== null || state.selected >= 0;
      for (var k = 0; k < rects.length; k++) {
        var r = rects[k];
        var y = rowY(r.d);
        var col = colours(r);
        ctx.globalAlpha = dim && !r.c && r.n !== 0 && !highlighted(r.n) ? 0.45 : 1;
        ctx.fillStyle = col[0];
        ctx.fillRect(r.x, y, Math.max(r.w - (r.w > 3 ? 1 : 0), 0.5), ROW - 1);
        if (r.w > charWidth * 3) {
          var text = fitText(nodeName(r.n), r.w - 6);
          if (text) {
            ctx.fillStyle = col[1];
            ctx.fillText(text, r.x + 3, y + ROW / 2);
          }
        }
      }
      ctx.globalAlpha = 1;
    }

    // ---- the frame under the pointer -----------------------------------------

    function rectAt(x, y) {
      var row = Math.floor(y / ROW);
      var d = state.icicle ? row : maxDepth - row;
      var list = byDepth[d];
      if (!list || y < 0) return null;
      for (var k = 0; k < list.length; k++) {
        var r = rects[list[k]];
        if (x >= r.x && x < r.x + r.w) return r;
      }
      return null;
    }
    function pointer(ev) {
      var b = canvas.getBoundingClientRect();
      return rectAt(ev.clientX - b.left, ev.clientY - b.top);
    }

    // What a frame is, as lines of text (for the tooltip and the status line).
    function describe(n) {
      var u = unit(), lines = [];
      var rootNow = val(0);
      if (nodeFile(n)) lines.push(nodeFile(n));
      if (!diff) {
        lines.push(label(val(n), u) + ' (' + pct(val(n), rootNow) + ' of total' +
          (state.zoom !== 0 && n !== state.zoom ? ', ' + pct(val(n), val(state.zoom)) + ' of ' + nodeName(state.zoom) : '') +
          ')' + (selfVal(n) ? ', self ' + label(selfVal(n), u) : ''));
      } else {
        var now = val(n), was = base(n), d = now - was;
        lines.push('new ' + label(now, u) + ' (' + pct(now, rootNow) + '), base ' + label(was, u) +
          ' (' + pct(was, base(0)) + ')');
        lines.push('change ' + signed(d, u) + (was !== 0 ? ' (' + (d >= 0 ? '+' : '-') + pct(d, was) + ')' : now !== 0 ? ' (new)' : ''));
      }
      return lines;
    }

    var tooltip = $('tooltip');
    var status = $('status');
    var statusText = '';
    function setStatus(text) {
      statusText = text;
      status.textContent = text;
    }
    function showTooltip(r, ev) {
      tooltip.textContent = '';
      var b = document.createElement('span');
      b.className = 'name';
      b.textContent = nodeName(r.n);
      tooltip.appendChild(b);
      tooltip.appendChild(document.createTextNode(describe(r.n).join('\n')));
      tooltip.hidden = false;
      var g = $('graph').getBoundingClientRect();
      var x = ev.clientX - g.left + 14, y = ev.clientY - g.top + 14;
      var tw = tooltip.offsetWidth, th = tooltip.offsetHeight;
      if (x + tw > g.width) x = Math.max(0, ev.clientX - g.left - tw - 10);
      if (y + th > g.height && y - th - 24 >= 0) y = y - th - 24;
      tooltip.style.left = x + 'px';
      tooltip.style.top = y + 'px';
    }

    canvas.addEventListener('mousemove', function (ev) {
      var r = pointer(ev);
      if (!r) {
        tooltip.hidden = true;
        status.textContent = statusText;
        return;
      }
      showTooltip(r, ev);
      status.textContent = nodeName(r.n) + ': ' + describe(r.n).join('; ');
    });
    canvas.addEventListener('mouseleave', function () {
      tooltip.hidden = true;
      status.textContent = statusText;
    });
    canvas.addEventListener('click', function (ev) {
      var r = pointer(ev);
      if (!r) return;
      tooltip.hidden = true;
      zoom(r.n);
      // A tap shows what a hover would have.
      setStatus(nodeName(r.n) + ': ' + describe(r.n).join('; '));
    });

    // ---- zoom and the path to it --------------------------------------------

    function zoom(n) {
      state.zoom = n;
      render();
    }
    function renderCrumbs() {
      var nav = $('crumbs');
      nav.textContent = '';
      var chain = [];
      for (var a = state.zoom; a >= 0; a = parent[a]) chain.unshift(a);
      chain.forEach(function (n, k) {
        if (k) {
          var sep = document.createElement('span');
          sep.className = 'sep';
          sep.textContent = '\u203a';
          nav.appendChild(sep);
        }
        var b = document.createElement('button');
        b.type = 'button';
        b.textContent = nodeName(n);
        b.title = nodeName(n);
        b.addEventListener('click', function () { zoom(n); });
        nav.appendChild(b);
      });
      document.body.dataset.zoom = state.zoom === 0 ? '' : nodeName(state.zoom);
    }

    // ---- the top table ------------------------------------------------------

    // Flat and cum per function name, as pprof's top: flat sums the frames'
    // self values; cum counts each sample once, so a frame inside another
    // frame of the same function (recursion) adds nothing.
    var table = null;
    function aggregate() {
      var S = strings.length;
      var t = {
        flat: new Float64Array(S), cum: new Float64Array(S),
        flatBase: new Float64Array(S), cumBase: new Float64Array(S), frames: new Int32Array(S)
      };
      var onPath = new Int32Array(S);
      var path = [0];
      for (var k = 1; k < N; k++) {
        while (path[path.length - 1] !== parent[k]) onPath[nameOf[path.pop()]]--;
        var n = nameOf[k];
        t.flat[n] += selfVal(k);
        if (diff) t.flatBase[n] += selfBase(k);
        if (onPath[n] === 0) {
          t.cum[n] += val(k);
          if (diff) t.cumBase[n] += base(k);
        }
        t.frames[n]++;
        onPath[n]++;
        path.push(k);
      }
      var rows = [];
      for (var s = 0; s < S; s++) if (t.frames[s] > 0) rows.push(s);
      t.rows = rows;
      return t;
    }

    var COLUMNS = diff ? [
      ['flat', 'flat', 'Self value in NEW'], ['dflat', 'flat \u0394', 'NEW minus BASE, self'],
      ['cum', 'cum', 'Total value in NEW'], ['cumpct', 'cum%', 'Share of NEW\u2019s total', 'pct'],
      ['dcum', 'cum \u0394', 'NEW minus BASE, total'], ['name', 'name', 'Function']
    ] : [
      ['flat', 'flat', 'Value where the function was running'], ['flatpct', 'flat%', 'Share of the total', 'pct'],
      ['cum', 'cum', 'Value with the function anywhere on the stack'], ['cumpct', 'cum%', 'Share of the total', 'pct'],
      ['name', 'name', 'Function']
    ];
    function sortValue(key, s) {
      switch (key) {
        case 'flat': case 'flatpct': return table.flat[s];
        case 'cum': case 'cumpct': return table.cum[s];
        case 'dflat': return table.flat[s] - table.flatBase[s];
        case 'dcum': return table.cum[s] - table.cumBase[s];
      }
      return 0;
    }
    function renderHead() {
      var tr = document.querySelector('#top thead tr');
      tr.textContent = '';
      COLUMNS.forEach(function (c) {
        var th = document.createElement('th');
        th.textContent = c[1];
        th.title = c[2] + ' (click to sort)';
        th.dataset.key = c[0];
        th.className = (c[0] === 'name' ? 'name' : '') + (c[3] ? ' ' + c[3] : '');
        th.tabIndex = 0;
        if (state.sortKey === c[0]) th.setAttribute('aria-sort', state.sortDesc ? 'descending' : 'ascending');
        var go = function () {
          if (state.sortKey === c[0]) state.sortDesc = !state.sortDesc;
          else { state.sortKey = c[0]; state.sortDesc = c[0] !== 'name'; }
          renderHead();
          renderTable();
        };
        th.addEventListener('click', go);
        th.addEventListener('keydown', function (ev) { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); go(); } });
        tr.appendChild(th);
      });
    }
    function renderTable() {
      var u = unit(), whole = val(0);
      var rows = table.rows.filter(function (s) {
        return nameMatch === null || nameMatch[s] === 1 || s === state.selected;
      });
      var key = state.sortKey, sign = state.sortDesc ? -1 : 1;
      rows.sort(function (a, b) {
        var r;
        if (key === 'name') r = shown[a] < shown[b] ? -1 : shown[a] > shown[b] ? 1 : 0;
        else r = sortValue(key, a) - sortValue(key, b) || Math.abs(table.cum[a]) - Math.abs(table.cum[b]);
        return r * sign || (shown[a] < shown[b] ? -1 : shown[a] > shown[b] ? 1 : 0);
      });
      var body = document.querySelector('#top tbody');
      body.textContent = '';
      var frag = document.createDocumentFragment();
      rows.slice(0, MAX_ROWS).forEach(function (s) {
        var tr = document.createElement('tr');
        tr.tabIndex = 0;
        tr.dataset.name = shown[s];
        if (s === state.selected) tr.className = 'selected';
        COLUMNS.forEach(function (c) {
          var td = document.createElement('td');
          var x;
          switch (c[0]) {
            case 'flat': td.textContent = label(table.flat[s], u); break;
            case 'flatpct': td.textContent = pct(table.flat[s], whole); break;
            case 'cum': td.textContent = label(table.cum[s], u); break;
            case 'cumpct': td.textContent = pct(table.cum[s], whole); break;
            case 'dflat': case 'dcum':
              x = sortValue(c[0], s);
              td.textContent = signed(x, u);
              if (x) td.className = x > 0 ? 'up' : 'down';
              break;
            case 'name': td.textContent = shown[s]; td.className = 'name'; break;
          }
          if (c[3]) td.className += ' ' + c[3];
          tr.appendChild(td);
        });
        var pick = function () { select(s); };
        tr.addEventListener('click', pick);
        tr.addEventListener('keydown', function (ev) { if (ev.key === 'Enter') pick(); });
        frag.appendChild(tr);
      });
      body.appendChild(frag);
      $('table-note').textContent = (rows.length > MAX_ROWS ? 'The first ' + MAX_ROWS + ' of ' : '') +
        rows.length + ' function' + (rows.length === 1 ? '' : 's') + (nameMatch ? ' matching the search' : '') +
        '. Click a row to highlight its frames and zoom into the heaviest.';
    }

    // A row picked: its function's frames highlighted, the heaviest zoomed
    // into. Picked again, it lets go.
    function select(s) {
      if (state.selected === s) {
        state.selected = -1;
        state.zoom = 0;
      } else {
        state.selected = s;
        var best = -1;
        for (var k = 1; k < N; k++) if (nameOf[k] === s && (best < 0 || weight(k) > weight(best))) best = k;
        state.zoom = best >= 0 ? best : 0;
      }
      render();
    }

    // ---- everything else on the page ----------------------------------------

    function renderStatus() {
      var u = unit(), parts = [];
      if (nameMatch !== null || state.selected >= 0) {
        var m = matchedShare();
        var what = state.selected >= 0 && nameMatch === null ? shown[state.selected] : 'Matched';
        parts.push(what + ': ' + label(m[0], u) + ' of ' + label(val(0), u) + ' (' + pct(m[0], val(0)) + ')' +
          (diff ? '; base ' + label(m[1], u) + ' (' + pct(m[1], base(0)) + ')' : '') + searchNote);
      } else if (diff) {
        parts.push('Total: new ' + label(val(0), u) + ', base ' + label(base(0), u) + ', change ' +
          signed(val(0) - base(0), u) + '.');
      } else {
        parts.push('Total: ' + label(val(0), u) + '.');
      }
      parts.push(weight(0) > 0 ? 'Hover a frame for details; click to zoom; Esc resets.' : 'No samples of this type.');
      setStatus(parts.join(' '));
    }

    function renderLegend() {
      var lg = $('legend');
      lg.textContent = '';
      if (!diff) {
        lg.textContent = 'Width: share of ' + types[state.type].type + '. ' +
          (state.icicle ? 'Root on top; callees below their callers.' : 'Root at the bottom; callees above their callers.');
        return;
      }
      var add = function (colour, text) {
        var sw = document.createElement('span');
        sw.className = 'swatch';
        sw.style.background = colour;
        lg.appendChild(sw);
        lg.appendChild(document.createTextNode(text));
      };
      lg.appendChild(document.createTextNode('Width: NEW + BASE.'));
      add('rgb(214,39,40)', 'grew');
      add('rgb(31,90,214)', 'shrank');
      add('#e2e4e9', 'about the same (deeper colour: larger relative change)');
    }

    function render() {
      layout();
      draw();
      renderCrumbs();
      renderStatus();
      renderLegend();
      renderTable();
      document.body.dataset.type = types[state.type].type;
      document.body.dataset.layout = state.icicle ? 'icicle' : 'flame';
      if (opts.onState) opts.onState({ type: types[state.type].type, query: state.query, icicle: state.icicle });
    }

    function reset() {
      state.zoom = 0;
      state.query = '';
      state.selected = -1;
      $('search').value = '';
      compileSearch();
      tooltip.hidden = true;
      render();
    }

    // ---- the header and controls --------------------------------------------

    var title = data.title || document.title || 'cprof';
    $('title').textContent = show(title) + (diff ? ' (diff: NEW vs BASE)' : '');
    var meta = [];
    if (data.time_nanos > 0) meta.push(new Date(data.time_nanos / 1e6).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC'));
    if (data.duration_nanos > 0) meta.push('duration ' + label(data.duration_nanos, 'nanoseconds'));
    meta.push(N - 1 + ' frames');
    $('meta').textContent = meta.join(' \u00b7 ');
    (data.comments || []).forEach(function (c) {
      var li = document.createElement('li');
      li.textContent = show(c);
      $('comments').appendChild(li);
    });

    var select_ = $('type');
    types.forEach(function (t, k) {
      var op = document.createElement('option');
      op.value = String(k);
      op.textContent = show(t.type || '(type ' + k + ')') + (t.unit ? ' (' + show(t.unit) + ')' : '');
      select_.appendChild(op);
    });
    select_.value = String(state.type);
    select_.addEventListener('change', function () {
      state.type = parseInt(select_.value, 10);
      table = aggregate();
      render();
    });

    var searchTimer = 0;
    $('search').addEventListener('input', function () {
      clearTimeout(searchTimer);
      // A short pause, so that a large tree is not searched per keystroke.
      searchTimer = setTimeout(function () {
        state.query = $('search').value;
        compileSearch();
        render();
      }, N > 20000 ? 150 : 0);
    });

    // The state the view started from, in the controls.
    $('search').value = state.query;
    $('layout').textContent = state.icicle ? 'Flame' : 'Icicle';
    $('layout').setAttribute('aria-pressed', String(state.icicle));
    $('layout').addEventListener('click', function () {
      state.icicle = !state.icicle;
      this.textContent = state.icicle ? 'Flame' : 'Icicle';
      this.setAttribute('aria-pressed', String(state.icicle));
      render();
    });
    $('reset').addEventListener('click', reset);
    document.addEventListener('keydown', onKey);
    function onKey(ev) {
      if (ev.key === 'Escape') {
        reset();
        if (document.activeElement === $('search')) $('search').blur();
      } else if (ev.key === '/' && document.activeElement !== $('search')) {
        ev.preventDefault();
        $('search').focus();
      }
    }

    var lastWidth = 0, pending = false;
    function resized() {
      if (pending) return;
      pending = true;
      requestAnimationFrame(function () {
        pending = false;
        var w = Math.floor($('graph').clientWidth);
        if (w !== lastWidth) {
          lastWidth = w;
          layout();
          draw();
        }
      });
    }
    var observer = null;
    if (window.ResizeObserver) (observer = new ResizeObserver(resized)).observe($('graph'));
    else window.addEventListener('resize', resized);

    // For tests and the curious: where a function's frames are drawn, in
    // viewport pixels.
    window.cprofViewer = {
      state: state,
      frames: function (name) {
        var b = canvas.getBoundingClientRect(), out = [];
        rects.forEach(function (r) {
          if (nodeName(r.n) === name) out.push({ node: r.n, depth: r.d, x: b.left + r.x, y: b.top + rowY(r.d), w: r.w, h: ROW - 1, collapsed: r.c });
        });
        return out;
      },
      zoom: zoom,
      reset: reset,
      destroy: function () {
        document.removeEventListener('keydown', onKey);
        if (observer) observer.disconnect();
        else window.removeEventListener('resize', resized);
      }
    };

    renderHead();
    compileSearch();
    table = aggregate();
    render();
    lastWidth = Math.floor($('graph').clientWidth);
    document.body.dataset.ready = '1';
  }
})();
