/* cprof collect's query page (collect.html). Times travel as Unix
 * nanoseconds in decimal strings, as the server wants them: a browser's
 * numbers would round them. For tests: body's data-points is the number
 * of points drawn, data-view the frame's address, data-error the last
 * error. */
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var series = [];
  var chart = null;

  function ns(ms) { return String(Math.floor(ms)) + '000000'; }

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

  function fill(sel, values, all) {
    var keep = sel.value;
    sel.textContent = '';
    if (all) sel.appendChild(new Option('all', ''));
    values.forEach(function (v) { sel.appendChild(new Option(v, v)); });
    if (keep !== '' && values.indexOf(keep) >= 0) sel.value = keep;
  }

  function uniq(list) {
    return list.filter(function (v, i) { return list.indexOf(v) === i; });
  }

  function pickers() {
    fill($('job'), uniq(series.map(function (s) { return s.job; })));
    var ofJob = series.filter(function (s) { return s.job === $('job').value; });
    fill($('instance'), uniq(ofJob.map(function (s) { return s.instance; })), true);
    var inst = $('instance').value;
    fill($('type'), uniq(ofJob.filter(function (s) { return !inst || s.instance === inst; })
      .map(function (s) { return s.type; })));
  }

  function range() {
    if ($('range').value === 'custom') {
      var f = Date.parse($('from').value), t = Date.parse($('to').value);
      if (isNaN(f) || isNaN(t) || f > t) return null;
      return { from: ns(f), to: ns(t + 999), ms: t - f };
    }
    var now = Date.now(), span = Number($('range').value) * 1000;
    return { from: ns(now - span), to: ns(now), ms: span };
  }

  function query(from, to) {
    var q = 'job=' + encodeURIComponent($('job').value) +
      '&type=' + encodeURIComponent($('type').value) + '&from=' + from + '&to=' + to;
    if ($('instance').value) q += '&instance=' + encodeURIComponent($('instance').value);
    if ($('pid').value)
      q += '&pid=' + encodeURIComponent($('pid').value);
    return q;
  }

  function view(from, to, base) {
    var url = 'view?' + query(from, to);
    if (base) url += '&base_from=' + base.from + '&base_to=' + base.to;
    $('view').src = url;
    document.body.dataset.view = url;
  }

  function draw(rows) {
    // A line per instance, and per process of a tree scraped with
    // process_tree: each (its rows carry a pid).
    var byInstance = {};
    rows.forEach(function(r) {
      var k = r.instance + (r.pid ? ' pid ' + r.pid : '');
      (byInstance[k] = byInstance[k] || []).push({x : r.t, y : r.total, ns : r.time_ns});
    });
    if (!$('pid').value) {
      var pids = uniq(
          rows.filter(function(r) { return r.pid; }).map(function(r) { return String(r.pid); }));
      fill($('pid'), pids.sort(function(a, b) { return a - b; }), true);
      $('pid').parentNode.style.display = pids.length ? '' : 'none';
    }
    var colors = ['#3b6fd8', '#d8613b', '#2e9d57', '#9b4bd1', '#c9a227', '#2aa3b8'];
    var sets = Object.keys(byInstance).map(function (k, i) {
      var c = colors[i % colors.length];
      return { label: k, data: byInstance[k], pointRadius: 3, borderWidth: 1.5, tension: 0,
        borderColor: c, backgroundColor: c };
    });
    if (chart) chart.destroy();
    chart = new Chart($('chart'), {
      type: 'line',
      data: { datasets: sets },
      options: {
        animation: false, maintainAspectRatio: false,
        scales: { x: { type: 'linear', ticks: { callback: function (v) {
          return new Date(v).toLocaleTimeString(); } } } },
        plugins: { tooltip: { callbacks: { title: function (items) {
          return new Date(items[0].raw.x).toISOString(); } } } },
        // A point is one profile: the frame shows just that moment.
        onClick: function (e, els) {
          if (!els.length) return;
          var p = sets[els[0].datasetIndex].data[els[0].index];
          view(p.ns, p.ns);
          status('showing the profile of ' + new Date(p.x).toISOString());
        }
      }
    });
    document.body.dataset.points = String(rows.length);
  }

  function show(ev) {
    if (ev) ev.preventDefault();
    var r = range();
    if (!r) { status('the custom range wants a start before its end', true); return; }
    if (!$('job').value || !$('type').value) { status('nothing stored yet'); return; }
    get('api/profiles?' + query(r.from, r.to)).then(function (rows) {
      draw(rows);
      if (!rows.length) { status('no profiles in the range'); $('view').removeAttribute('src'); return; }
      var base = null;
      if ($('diff').checked) {
        var f = BigInt(r.from), span = BigInt(r.to) - f;
        base = { from: String(f - span - 1n), to: String(f - 1n) };
      }
      view(r.from, r.to, base);
      status(rows.length + ' profiles merged; click a point for one of them');
    }).catch(function (e) { status(e.message, true); });
  }

  $('range').addEventListener('change', function () {
    $('custom').className = $('range').value === 'custom' ? 'on' : '';
  });
  $('job').addEventListener('change', function() {
    $('pid').value = '';
    pickers();
    show();
  });
  $('instance').addEventListener('change', function() {
    $('pid').value = '';
    pickers();
    show();
  });
  $('pid').addEventListener('change', function() { show(); });
  $('type').addEventListener('change', function () { show(); });
  $('picker').addEventListener('submit', show);

  get('api/series').then(function (s) {
    series = s;
    pickers();
    show();
  }).catch(function (e) { status(e.message, true); });
}());
