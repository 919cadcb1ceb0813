/* cprof collect's query page (collect.html).
 *
 * The view is one state object, st, and the page's address is that state
 * (stateQuery and parseState): opening an address reproduces the view,
 * and each change of it is a history entry, so that Back goes to the view
 * before. Times travel as Unix nanoseconds in decimal strings, as the
 * server wants them: a browser's numbers would round them.
 *
 * The line plots each stored profile's value (/api/profiles' "value") in
 * the series' unit (/api/series' "unit" and "quantity"), with ticks a
 * person reads: bytes in B/KiB/MiB/GiB steps, cores with two decimals at
 * most, threads whole. Failed scrapes (/api/scrapes) are marks on it, and
 * a target gone down a dashed line where its line stops, each with its
 * reason and error in the tooltip. Names and errors reach the page only as
 * text (textContent, or the canvas).
 *
 * For tests: body's data-points is the number of profiles drawn, data-gaps
 * the failed scrapes marked, data-downs the targets marked down, data-view
 * the frame's address (the diff when comparing), data-view-a and
 * data-view-b the compared ranges' frames, data-from and data-to the range
 * shown, data-yunit and data-yticks the y axis' unit and tick labels,
 * data-shown the number of views shown (each once its frames have loaded
 * and the status says what they show), data-error the last error. */
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var series = [];
  var chart = null;
  var shown = 0;
  // The view: what the address holds.
  var st = {};
  // What the last draw put on the line, for the overlay plugin.
  // dragged: the pointer was dragged since it went down, so the click
  // that ends it is no click on a point.
  var downs = [], drag = null, dragged = false;

  var RELATIVE = { s: 1, m: 60, h: 3600, d: 86400 };

  function ns(ms) { return String(Math.floor(ms)) + '000000'; }
  function ms(nsText) { return Number(nsText) / 1e6; }

  function status(text, error) {
    $('status').textContent = text;
    $('status').className = error ? 'error' : '';
    if (error) document.body.dataset.error = text;
  }

  function get(url) {
    return fetch(url).then(function (r) {
      if (!r.ok) return r.text().then(function (t) { throw new Error(t.trim()); });
      return r.json();
    });
  }

  function uniq(list) {
    return list.filter(function (v, i) { return list.indexOf(v) === i; });
  }

  // ---- the state and the address ------------------------------------------

  // A range is {from, to} in nanoseconds, as text.
  function rangeText(r) { return r ? r.from + '-' + r.to : ''; }
  function parseRange(text) {
    var m = /^(\d+)-(\d+)$/.exec(text || '');
    return m && BigInt(m[1]) <= BigInt(m[2]) ? { from: m[1], to: m[2] } : null;
  }

  function parseState(search) {
    var p = new URLSearchParams(search);
    var s = {
      job: p.get('job') || '', instance: p.get('instance') || '', pid: p.get('pid') || '',
      type: p.get('type') || '', range: p.get('range') || '', from: '', to: '',
      mode: p.get('mode') || 'auto', selector: p.get('selector') || '',
      diff: p.get('diff') === '1', compare: p.get('compare') === '1',
      a: parseRange(p.get('a')), b: parseRange(p.get('b'))
    };
    var abs = parseRange((p.get('from') || '') + '-' + (p.get('to') || ''));
    if (abs && !s.range) { s.from = abs.from; s.to = abs.to; }
    if (!abs && !/^\d+[smhd]$/.test(s.range)) s.range = '15m';
    if (s.a || s.b) s.compare = true;
    return s;
  }

  function stateQuery(s) {
    var p = new URLSearchParams();
    p.set('job', s.job);
    if (s.instance) p.set('instance', s.instance);
    if (s.pid) p.set('pid', s.pid);
    p.set('type', s.type);
    if (s.range) p.set('range', s.range);
    else { p.set('from', s.from); p.set('to', s.to); }
    if (s.mode && s.mode !== 'auto') p.set('mode', s.mode);
    if (s.selector) p.set('selector', s.selector);
    if (s.diff && !s.compare) p.set('diff', '1');
    if (s.compare) {
      p.set('compare', '1');
      if (s.a) p.set('a', rangeText(s.a));
      if (s.b) p.set('b', rangeText(s.b));
    }
    return p.toString();
  }

  // The range shown: a relative one ends now.
  function resolved() {
    if (!st.range) return { from: st.from, to: st.to };
    var m = /^(\d+)([smhd])$/.exec(st.range), now = Date.now();
    return { from: ns(now - Number(m[1]) * RELATIVE[m[2]] * 1000), to: ns(now) };
  }

  // ---- the controls --------------------------------------------------------

  function fill(sel, values, all, want) {
    sel.textContent = '';
    if (all) sel.appendChild(new Option('all', ''));
    values.forEach(function (v) { sel.appendChild(new Option(v, v)); });
    if (want !== '' && values.indexOf(want) >= 0) sel.value = want;
    return sel.value;
  }

  // The pickers from the series, keeping st's choices where they exist;
  // st takes what the pickers could hold.
  function pickers() {
    st.job = fill($('job'), uniq(series.map(function (s) { return s.job; })), false, st.job);
    var ofJob = series.filter(function (s) { return s.job === st.job; });
    st.instance = fill($('instance'), uniq(ofJob.map(function (s) { return s.instance; })), true,
      st.instance);
    var types = uniq(ofJob.filter(function (s) { return !st.instance || s.instance === st.instance; })
      .map(function (s) { return s.type; }));
    // CPU first: what a person asks first of a program.
    if (types.indexOf(st.type) < 0) st.type = types.indexOf('process_cpu') >= 0 ? 'process_cpu' : '';
    st.type = fill($('type'), types, false, st.type);
    var sm = meta();
    var auto = { delta: 'sum', cumulative: 'delta', snapshot: 'average' }[sm.kind];
    $('mode').options[0].textContent = auto ? 'auto (' + auto + ')' : 'auto';
  }

  // The series' kind, unit and quantity (the same for every instance).
  function meta() {
    for (var i = 0; i < series.length; i++)
      if (series[i].job === st.job && series[i].type === st.type) return series[i];
    return {};
  }

  function pad(n) { return (n < 10 ? '0' : '') + n; }
  function localInput(nsText) {
    if (!nsText) return '';
    var d = new Date(ms(nsText));
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + 'T' +
      pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }
  // A datetime-local's value as nanoseconds; end: the last of its second.
  function inputNs(id, end) {
    var t = Date.parse($(id).value);
    return isNaN(t) ? null : ns(t + (end ? 999 : 0));
  }

  // st into the controls.
  function controls() {
    pickers();
    var sel = $('range');
    if (st.range && !Array.prototype.some.call(sel.options, function (o) { return o.value === st.range; }))
      sel.insertBefore(new Option('last ' + st.range, st.range), sel.lastElementChild);
    sel.value = st.range;
    $('custom').className = st.range ? '' : 'on';
    $('from').value = localInput(st.from);
    $('to').value = localInput(st.to);
    $('mode').value = st.mode;
    if ($('mode').value !== st.mode) st.mode = $('mode').value = 'auto';
    $('selector').value = st.selector;
    $('diff').checked = st.diff;
    $('diff').parentNode.style.display = st.compare ? 'none' : '';
    $('compare').checked = st.compare;
    $('ab').className = st.compare ? 'on' : '';
    $('a_from').value = localInput(st.a && st.a.from);
    $('a_to').value = localInput(st.a && st.a.to);
    $('b_from').value = localInput(st.b && st.b.from);
    $('b_to').value = localInput(st.b && st.b.to);
  }

  // A control changed: st takes it, and the view is shown (a new entry),
  // unless apply said no.
  function changed(apply) {
    return function () {
      if (apply.call(this) === false) return;
      controls();
      show(true);
    };
  }
  $('job').addEventListener('change', changed(function () { st.job = this.value; st.pid = ''; }));
  $('instance').addEventListener('change', changed(function () { st.instance = this.value; st.pid = ''; }));
  $('pid').addEventListener('change', changed(function () { st.pid = this.value; }));
  $('type').addEventListener('change', changed(function () { st.type = this.value; }));
  $('mode').addEventListener('change', changed(function () { st.mode = this.value; }));
  $('diff').addEventListener('change', changed(function () { st.diff = this.checked; }));
  $('compare').addEventListener('change', changed(function () {
    st.compare = this.checked;
    if (!st.compare) st.a = st.b = null;
  }));
  $('range').addEventListener('change', changed(function () {
    if (!this.value) {
      var r = resolved();
      st.from = r.from;
      st.to = r.to;
    }
    st.range = this.value;
  }));
  function fromInputs(a, b, set) {
    return changed(function () {
      var f = inputNs(a, false), t = inputNs(b, true);
      if (!f || !t) return false; // the other end is still to come
      if (BigInt(f) <= BigInt(t)) return set({ from: f, to: t });
      status('a range wants a start before its end', true);
      return false;
    });
  }
  ['from', 'to'].forEach(function (id) {
    $(id).addEventListener('change', fromInputs('from', 'to', function (r) {
      st.range = '';
      st.from = r.from;
      st.to = r.to;
    }));
  });
  ['a_from', 'a_to'].forEach(function (id) {
    $(id).addEventListener('change', fromInputs('a_from', 'a_to', function (r) { st.a = r; }));
  });
  ['b_from', 'b_to'].forEach(function (id) {
    $(id).addEventListener('change', fromInputs('b_from', 'b_to', function (r) { st.b = r; }));
  });
  // The selector is taken when the form is sent (Enter, or Show), and
  // Show also moves a relative range on to now.
  $('picker').addEventListener('submit', function (ev) {
    ev.preventDefault();
    st.selector = $('selector').value.trim();
    controls();
    show(true);
  });
  window.addEventListener('popstate', function () {
    st = parseState(location.search);
    controls();
    show(false);
  });

  // ---- the axes -------------------------------------------------------------

  // The smallest of 1, 2, 2.5, 5 (1, 2, 5 for whole units) times a power
  // of ten that is at least x.
  function nice(x, whole) {
    var e = Math.pow(10, Math.floor(Math.log10(x))), f = x / e;
    var steps = whole ? [1, 2, 5, 10] : [1, 2, 2.5, 5, 10];
    for (var i = 0; i < steps.length; i++) if (f <= steps[i] + 1e-9) return steps[i] * e;
    return 10 * e;
  }

  // The y axis of a unit up to max: {max, step, label(v), unit}. Bytes
  // step in B, KiB, MiB or GiB; counts (bytes, threads) never in fractions.
  function yAxis(unit, max) {
    var base = 1, suffix = unit || '', whole = false, least = 0;
    if (unit === 'bytes' || unit === 'bytes/s') {
      var names = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], k = 0;
      while (k < names.length - 1 && max >= Math.pow(1024, k + 1)) k++;
      base = Math.pow(1024, k);
      suffix = names[k] + (unit === 'bytes/s' ? '/s' : '');
      whole = k === 0;
      least = 1 / base; // one byte, in the unit shown
    } else if (unit === 'threads') {
      whole = true;
      least = 1;
    } else if (unit === 'cores') {
      least = 0.01;
    } else {
      least = 0.001;
    }
    if (!(max > 0)) max = least * 5 * base;
    var step = Math.max(nice(max / base / 5, whole), least) * base;
    if (whole && step < base) step = base;
    // A little room above the highest point, so that it is not drawn on
    // the chart's edge.
    var top = Math.ceil(max * 1.02 / step - 1e-9) * step;
    if (top <= 0) top = step;
    var s = step / base, dec = 0;
    while (dec < 3 && Math.abs(Math.round(s * Math.pow(10, dec)) - s * Math.pow(10, dec)) > 1e-6) dec++;
    return {
      max: top, step: step, unit: suffix,
      label: function (v) { return (v ? (v / base).toFixed(dec) : '0') + (suffix ? ' ' + suffix : ''); }
    };
  }

  var TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
    21600, 43200, 86400, 172800, 604800].map(function (s) { return s * 1000; });

  // Time ticks at whole multiples of a step of the local clock, about
  // eight of them: seconds shown only when the step is under a minute, the
  // date when the range is longer than a day.
  function xAxis(from, to) {
    var span = Math.max(to - from, 1000), step = TIME_STEPS[TIME_STEPS.length - 1];
    for (var i = 0; i < TIME_STEPS.length; i++) if (span / TIME_STEPS[i] <= 8) { step = TIME_STEPS[i]; break; }
    var off = new Date(from).getTimezoneOffset() * 60000, ticks = [];
    for (var t = Math.ceil((from - off) / step) * step + off; t <= to; t += step) ticks.push(t);
    return {
      ticks: ticks,
      label: function (v) {
        var d = new Date(v);
        var hm = pad(d.getHours()) + ':' + pad(d.getMinutes());
        var text = step < 60000 ? hm + ':' + pad(d.getSeconds()) : hm;
        return span > 86400000 ? pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' + text : text;
      }
    };
  }

  // ---- the line ------------------------------------------------------------

  var COLORS = ['#3b6fd8', '#2e9d57', '#9b4bd1', '#c9a227', '#2aa3b8', '#d8613b'];

  // A, B, the range being dragged and the targets gone down, drawn over
  // the chart.
  var overlay = {
    id: 'cprofOverlay',
    afterDatasetsDraw: function (c) {
      var x = c.scales.x, area = c.chartArea, g = c.ctx;
      g.save();
      function band(f, t, fillStyle, text) {
        var l = Math.max(area.left, x.getPixelForValue(f)), r = Math.min(area.right, x.getPixelForValue(t));
        if (r < area.left || l > area.right) return;
        if (r - l < 2) { l -= 1; r += 1; }
        g.fillStyle = fillStyle;
        g.fillRect(l, area.top, r - l, area.bottom - area.top);
        if (text) {
          g.fillStyle = '#1d2330';
          g.font = 'bold 12px system-ui,sans-serif';
          g.fillText(text, l + 3, area.top + 12);
        }
      }
      if (st.a) band(ms(st.a.from), ms(st.a.to), 'rgba(59,111,216,0.18)', 'A');
      if (st.b) band(ms(st.b.from), ms(st.b.to), 'rgba(216,97,59,0.18)', 'B');
      if (drag && drag.x1 !== undefined)
        band(x.getValueForPixel(Math.min(drag.x0, drag.x1)), x.getValueForPixel(Math.max(drag.x0, drag.x1)),
          drag.shift ? 'rgba(216,97,59,0.25)' : 'rgba(29,35,48,0.15)');
      g.strokeStyle = '#8e0000';
      g.setLineDash([4, 3]);
      downs.forEach(function (d) {
        var px = x.getPixelForValue(d.t);
        if (px < area.left || px > area.right) return;
        g.beginPath();
        g.moveTo(px, area.top);
        g.lineTo(px, area.bottom);
        g.stroke();
      });
      g.restore();
    }
  };

  function draw(rows, scrapes, r) {
    var sm = meta(), from = ms(r.from), to = ms(r.to);
    // A line per instance, and per process of a tree scraped with
    // process_tree: each (its rows carry a pid).
    var byLine = {}, last = {};
    rows.forEach(function (row) {
      var k = row.instance + (row.pid ? ' pid ' + row.pid : '');
      (byLine[k] = byLine[k] || []).push({ x: row.t, y: row.value, ns: row.time_ns });
    });
    // The processes of the rows; one picked (from the address, say) stays
    // a choice even when the rows are its alone.
    var pids = uniq(rows.filter(function (x) { return x.pid; }).map(function (x) { return String(x.pid); }));
    if (st.pid && pids.indexOf(st.pid) < 0) pids.push(st.pid);
    if (!st.pid || $('pid').options.length <= 1) {
      fill($('pid'), pids.sort(function (a, b) { return a - b; }), true, st.pid);
      $('pid').parentNode.style.display = pids.length ? '' : 'none';
    }
    // A failed scrape breaks its instance's line: the line stops where the
    // target went away and starts again when it is back.
    var failures = scrapes.failures || [];
    downs = (scrapes.transitions || []).filter(function (t) { return !t.up; });
    failures.forEach(function (f) {
      Object.keys(byLine).forEach(function (k) {
        if (k === f.instance || k.indexOf(f.instance + ' pid ') === 0) byLine[k].push({ x: f.t, y: null });
      });
    });
    var ymax = 0;
    Object.keys(byLine).forEach(function (k) {
      byLine[k].sort(function (a, b) { return a.x - b.x; });
      byLine[k].forEach(function (p) { if (p.y > ymax) ymax = p.y; });
    });
    var ya = yAxis(sm.unit, ymax), xa = xAxis(from, to);
    // Each target gone down: a mark where its line stops, at its last value.
    var downMarks = downs.map(function (d) {
      var y = 0;
      Object.keys(byLine).forEach(function (k) {
        if (k !== d.instance && k.indexOf(d.instance + ' pid ') !== 0) return;
        byLine[k].forEach(function (p) { if (p.x <= d.t && p.y !== null) y = p.y; });
      });
      return { x: d.t, y: y, ev: d };
    });
    var sets = Object.keys(byLine).map(function (k, i) {
      var c = COLORS[i % COLORS.length];
      return { label: k, data: byLine[k], pointRadius: 3, borderWidth: 1.5, tension: 0,
        borderColor: c, backgroundColor: c, spanGaps: false };
    });
    var lines = sets.length;
    sets.push({ label: 'failed scrape', data: failures.map(function (f) { return { x: f.t, y: 0, ev: f }; }),
      showLine: false, pointStyle: 'crossRot', pointRadius: 7, pointHoverRadius: 9, borderWidth: 2.5,
      borderColor: '#c62828', backgroundColor: '#c62828' });
    sets.push({ label: 'target down', data: downMarks, showLine: false, pointStyle: 'triangle',
      rotation: 180, pointRadius: 8, pointHoverRadius: 10, borderColor: '#8e0000', backgroundColor: '#8e0000' });
    if (chart) chart.destroy();
    chart = new Chart($('chart'), {
      type: 'line',
      data: { datasets: sets },
      plugins: [overlay],
      options: {
        animation: false, maintainAspectRatio: false, parsing: true,
        interaction: { mode: 'nearest', intersect: true },
        scales: {
          x: { type: 'linear', min: from, max: to,
            afterBuildTicks: function (ax) { ax.ticks = xa.ticks.map(function (v) { return { value: v }; }); },
            ticks: { autoSkip: false, maxRotation: 0, callback: xa.label } },
          y: { type: 'linear', min: 0, max: ya.max,
            afterBuildTicks: function (ax) {
              var t = [];
              for (var v = 0; v <= ya.max + ya.step / 2; v += ya.step) t.push({ value: v });
              ax.ticks = t;
            },
            ticks: { callback: ya.label },
            title: { display: !!sm.quantity, text: (sm.quantity || '') + (ya.unit ? ' (' + ya.unit + ')' : '') } }
        },
        plugins: {
          legend: { labels: { filter: function (item, data) {
            return item.datasetIndex < lines || data.datasets[item.datasetIndex].data.length > 0;
          } } },
          tooltip: { callbacks: {
            title: function (items) { return new Date(items[0].raw.x).toISOString(); },
            label: function (item) {
              var ev = item.raw.ev;
              if (!ev) return item.dataset.label + ': ' + (item.raw.y === null ? 'no value' : ya.label(item.raw.y));
              return (ev.up === false ? 'down: ' : 'failed: ') + ev.instance + ' ' + ev.type + ': ' + ev.reason;
            },
            afterLabel: function (item) {
              var ev = item.raw.ev;
              return ev && ev.error ? String(ev.error).match(/.{1,80}/g) : '';
            }
          } }
        },
        // A point is one profile: the frame shows just that moment.
        onClick: function (e, els) {
          if (dragged || !els.length || els[0].datasetIndex >= lines) return;
          var p = sets[els[0].datasetIndex].data[els[0].index];
          if (!p.ns) return;
          var at = new Date(p.x).toISOString();
          $('pair').className = '';
          frame('view-a', null);
          frame('view-b', null);
          frame('view', viewUrl({ from: p.ns, to: p.ns }));
          title('title-view', [['the profile of ' + at]]);
          status('showing the profile of ' + at);
        }
      }
    });
    var body = document.body.dataset;
    body.points = String(rows.length);
    body.gaps = String(failures.length);
    body.downs = String(downs.length);
    body.yunit = ya.unit;
    body.ytitle = sm.quantity || '';
    body.yticks = JSON.stringify(chart.scales.y.ticks.map(function (t) { return t.label; }));
  }

  // Drag on the chart: a range (with "compare", A); with Shift, B.
  var canvas = $('chart');
  canvas.addEventListener('mousedown', function (ev) {
    dragged = false;
    if (!chart || ev.button !== 0) return;
    var b = canvas.getBoundingClientRect(), x = ev.clientX - b.left, area = chart.chartArea;
    if (x < area.left || x > area.right) return;
    drag = { x0: x, shift: ev.shiftKey };
  });
  window.addEventListener('mousemove', function (ev) {
    if (!drag) return;
    var b = canvas.getBoundingClientRect(), area = chart.chartArea;
    drag.x1 = Math.max(area.left, Math.min(area.right, ev.clientX - b.left));
    drag.shift = drag.shift || ev.shiftKey;
    chart.draw();
  });
  window.addEventListener('mouseup', function (ev) {
    if (!drag) return;
    var d = drag;
    drag = null;
    if (d.x1 === undefined || Math.abs(d.x1 - d.x0) < 4) { chart.draw(); return; }
    dragged = true;
    var x = chart.scales.x;
    var f = x.getValueForPixel(Math.min(d.x0, d.x1)), t = x.getValueForPixel(Math.max(d.x0, d.x1));
    var r = { from: ns(f), to: ns(Math.ceil(t)) };
    if (d.shift || ev.shiftKey) {
      st.compare = true;
      st.b = r;
    } else if (st.compare) {
      st.a = r;
    } else {
      st.range = '';
      st.from = r.from;
      st.to = r.to;
    }
    controls();
    show(true);
  });

  // ---- the frames ----------------------------------------------------------

  function query(r) {
    var q = 'job=' + encodeURIComponent(st.job) + '&type=' + encodeURIComponent(st.type) +
      '&from=' + r.from + '&to=' + r.to;
    if (st.instance) q += '&instance=' + encodeURIComponent(st.instance);
    if (st.pid) q += '&pid=' + encodeURIComponent(st.pid);
    if (st.selector) q += '&selector=' + encodeURIComponent(st.selector);
    return q;
  }

  function viewUrl(r, base) {
    var url = 'view?' + query(r);
    if (st.mode !== 'auto') url += '&mode=' + encodeURIComponent(st.mode);
    if (base) url += '&base_from=' + base.from + '&base_to=' + base.to;
    return url;
  }

  function when(r) {
    var f = new Date(ms(r.from)), t = new Date(ms(r.to));
    return localInput(r.from).replace('T', ' ') + ' \u2013 ' +
      (f.toDateString() === t.toDateString() ? localInput(r.to).slice(11) : localInput(r.to).replace('T', ' '));
  }

  // A frame's page. A new iframe each time: a frame navigated again would
  // add its own entries to the window's history, and Back would step
  // through the frames' pages instead of the views.
  function frame(id, url) {
    var old = $(id);
    if ((old.getAttribute('src') || '') !== (url || '')) {
      var f = old.cloneNode(false);
      f.removeAttribute('src');
      delete f.dataset.loaded;
      f.addEventListener('load', function () { f.dataset.loaded = '1'; });
      if (url) f.src = url;
      old.replaceWith(f);
    }
    var key = { view: 'view', 'view-a': 'viewA', 'view-b': 'viewB' }[id];
    if (url) document.body.dataset[key] = url;
    else delete document.body.dataset[key];
  }

  // Resolves, once the frames ids have loaded, to the first error line one
  // of them shows (an answer in plain text, "400 the range holds ..."),
  // or '' when each drew its profile: the status says what they show.
  function loaded(ids) {
    return Promise.all(ids.map(function (id) {
      var f = $(id);
      if (!f.getAttribute('src')) return '';
      return new Promise(function (done) {
        function look() {
          var d = f.contentDocument;
          var text = d && d.contentType === 'text/plain' && d.body ? d.body.textContent.trim() : '';
          done(/^\d{3} /.test(text) ? text.split('\n')[0] : '');
        }
        if (f.dataset.loaded) look();
        else f.addEventListener('load', look, { once: true });
      });
    })).then(function (errors) { return errors.filter(Boolean)[0] || ''; });
  }

  function title(id, parts) {
    var h = $(id);
    h.textContent = '';
    parts.forEach(function (p) {
      var s = document.createElement('span');
      if (p[1]) s.className = p[1];
      s.textContent = p[0];
      h.appendChild(s);
    });
  }

  // The frames of the range r: one merge, its diff against the range
  // before, or with A and B both picked, A and B side by side and below
  // them B against A (the base is A: red grew in B, blue shrank). has:
  // whether A and B hold profiles; a range without any gets no frame (the
  // server's answer would be a 404), and the diff needs both.
  function frames(r, base, has) {
    var pair = st.compare && st.a && st.b;
    $('pair').className = pair ? 'on' : '';
    if (pair) {
      frame('view-a', has[0] ? viewUrl(st.a) : null);
      frame('view-b', has[1] ? viewUrl(st.b) : null);
      title('title-a', [['A', 'a'], [': ' + when(st.a) + (has[0] ? '' : ': no profiles')]]);
      title('title-b', [['B', 'b'], [': ' + when(st.b) + (has[1] ? '' : ': no profiles')]]);
      frame('view', has[0] && has[1] ? viewUrl(st.b, st.a) : null);
      title('title-view', has[0] && has[1] ?
        [['B', 'b'], [' against '], ['A', 'a'], [' (base A, new B): red grew in B, blue shrank']] : []);
    } else {
      frame('view-a', null);
      frame('view-b', null);
      frame('view', viewUrl(r, base));
      title('title-view', base ? [['this range against the one before it (base: the range before)']] : []);
    }
  }

  // How many profiles a range holds.
  function count(r) {
    return get('api/profiles?' + query(r)).then(function (l) { return l.length; });
  }

  var showing = 0; // the last show's number: an earlier one's merge says nothing once done
  function show(push) {
    var r = resolved(), q = stateQuery(st), mine = ++showing;
    if (push && '?' + q !== location.search) history.pushState(null, '', '?' + q);
    else history.replaceState(null, '', '?' + q);
    document.body.dataset.from = r.from;
    document.body.dataset.to = r.to;
    if (!st.job || !st.type) { status('nothing stored yet'); return; }
    var sq = 'job=' + encodeURIComponent(st.job) + '&type=' + encodeURIComponent(st.type) +
      '&from=' + r.from + '&to=' + r.to + (st.instance ? '&instance=' + encodeURIComponent(st.instance) : '');
    var scrapes = get('api/scrapes?' + sq).catch(function () { return { failures: [], transitions: [] }; });
    var rows = [], base = null, pair = st.compare && st.a && st.b;
    if (st.diff && !st.compare) {
      var f = BigInt(r.from), span = BigInt(r.to) - f;
      base = { from: String(f - span - 1n), to: String(f - 1n) };
    }
    Promise.all([get('api/profiles?' + query(r)), scrapes]).then(function (got) {
      rows = got[0];
      draw(rows, got[1], r);
      return Promise.all(pair ? [count(st.a), count(st.b)] : base && rows.length ? [count(base)] : []);
    }).then(function (n) {
      var m = meta(), said = null, ids = ['view'];
      if (st.compare && !pair) {
        frames(r, null);
        status('compare: drag on the line for A, Shift+drag for B (or type them above)');
      } else if (pair) {
        frames(r, null, n);
        ids = ['view-a', 'view-b', 'view'];
        said = n[0] && n[1] ? 'A and B side by side, and B against A below (' + st.mode + ' mode)' :
          'no profiles in ' + (n[0] ? 'B' : n[1] ? 'A' : 'A or B') + ': pick ranges with points on the line';
      } else if (!rows.length) {
        status('no profiles in the range');
        frame('view', null);
        $('pair').className = '';
      } else {
        // Nothing stored before the range (a young collector): the range alone.
        if (base && !n[0]) base = null;
        frames(r, base);
        said = rows.length + ' profiles merged (' + (m.kind ? m.kind + ': ' : '') +
          (st.mode === 'auto' ? { delta: 'summed', cumulative: 'the change over the range',
            snapshot: 'averaged' }[m.kind] || 'by kind' : st.mode) + ')' +
          (st.diff && !base ? '; nothing stored in the range before it to diff against' : '') +
          '; click a point for one of them';
      }
      if (said === null) return null;
      // A long range takes seconds to merge: said while it does; then what
      // the frames show, their error when they show one.
      status('merging ' + (pair ? 'A and B' : rows.length + ' profiles') + '\u2026');
      return loaded(ids).then(function (error) {
        if (mine === showing) status(error || said, !!error);
      });
    }).then(function () {
      document.body.dataset.shown = String(++shown);
    }).catch(function (e) {
      status(e.message, true);
      document.body.dataset.shown = String(++shown);
    });
  }

  get('api/series').then(function (s) {
    series = s;
    st = parseState(location.search);
    controls();
    show(false);
  }).catch(function (e) { status(e.message, true); });
}());
