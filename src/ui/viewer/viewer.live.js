/* The picker of /debug/pprof/ui/ (src/ui/ui.h): the viewer's page served by
 * the profiled program, without data. It lists the program's profiles
 * (ui/profiles), fetches the one picked as the viewer's JSON (ui/data),
 * counts down while a CPU profile or a comparison records, and hands the
 * JSON to the viewer (window.cprofView, viewer.js) on a fresh copy of the
 * page's markup. "Root by" offers the profile's label keys (the JSON's
 * labels: "thread", and those of cprof_do), asked for as tagroot=KEY, so
 * that the graph splits by thread or by label first. Links and requests are relative to the page, so any
 * CPROF_PREFIX or proxy path works. Names reach the page as text only.
 *
 * The page's address holds what is shown, so that a reload or a link
 * shows it again: ?profile=heap&show=diff&seconds=10&root=thread (the
 * picker's), &sample=alloc_space&search=^main&layout=icicle (the viewer's,
 * which it reports as they change). Each profile shown is a history entry
 * (Back shows the one before); the viewer's changes replace the entry.
 * An address naming the CPU profile records it again when opened.
 *
 * For tests: body's data-loaded counts the profiles drawn, data-loading is
 * "1" while one is fetched, data-ui-error holds the last error. */
(function () {
  'use strict';
  if (!window.cprofView) return; // a page with data of its own

  var $ = function (id) { return document.getElementById(id); };
  var header = document.querySelector('body > header');
  var main = document.querySelector('body > main');
  // The viewer draws into (and hangs listeners on) this markup: each
  // profile gets a pristine copy.
  var pristine = [header.cloneNode(true), main.cloneNode(true)];

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }

  var form = el('form', { id: 'picker', 'class': 'controls', 'aria-label': 'Profile' });
  form.style.cssText = 'padding:.5rem 1rem;border-bottom:1px solid #d4d8e0;display:flex;' +
    'flex-wrap:wrap;gap:.5rem 1rem;align-items:center;background:#f4f6fa';
  var name = el('select', { id: 'ui-name' });
  var mode = el('select', { id: 'ui-mode', title: 'What to show of a snapshot profile' });
  mode.appendChild(el('option', { value: 'now' }, 'now'));
  mode.appendChild(el('option', { value: 'diff' }, 'now against N s ago (diff)'));
  mode.appendChild(el('option', { value: 'delta' }, 'the change over N s'));
  var seconds = el('input', { id: 'ui-seconds', type: 'number', min: '1', max: '3600', value: '10', size: '5' });
  seconds.style.width = '5em';
  var root = el('select', { id: 'ui-root', title: 'Split the graph by a label first (pprof\'s tagroot)' });
  root.appendChild(el('option', { value: '' }, 'functions'));
  var go = el('button', { id: 'ui-load', type: 'submit' }, 'Show');
  var countdown = el('span', { id: 'ui-countdown', 'aria-live': 'polite' });
  var download = el('a', { id: 'ui-download', href: '#' }, 'download');
  var error = el('span', { id: 'ui-error', role: 'alert' });
  error.style.color = '#b91c1c';
  var note = el('span', { id: 'ui-note' });
  note.style.color = '#555';
  var lbl = function (text, control) {
    var l = el('label', { 'class': 'field' }, text + ' ');
    l.appendChild(control);
    return l;
  };
  var modeLabel = lbl('Show', mode);
  form.appendChild(lbl('Profile', name));
  form.appendChild(modeLabel);
  form.appendChild(lbl('Seconds', seconds));
  var rootLabel = lbl('Root by', root);
  rootLabel.style.display = 'none';
  form.appendChild(rootLabel);
  form.appendChild(go);
  form.appendChild(countdown);
  form.appendChild(download);
  form.appendChild(note);
  form.appendChild(error);
  document.body.insertBefore(form, document.body.firstChild);

  // The view in the address: read once here, written by remember().
  var asked = new URLSearchParams(location.search);
  var viewState = {
    type: asked.get('sample') || '', query: asked.get('search') || '',
    icicle: asked.get('layout') === 'icicle'
  };
  if (/^\d+$/.test(asked.get('seconds') || '')) seconds.value = asked.get('seconds');
  if (['now', 'diff', 'delta'].indexOf(asked.get('show')) >= 0) mode.value = asked.get('show');
  if (asked.get('root')) root.appendChild(el('option', { value: asked.get('root') }, asked.get('root')));
  root.value = asked.get('root') || '';

  // The address of what is shown: the picker's choices and the viewer's.
  function address() {
    var p = new URLSearchParams();
    p.set('profile', name.value);
    if (!isCpu()) p.set('show', mode.value);
    if (isCpu() || mode.value !== 'now') p.set('seconds', seconds.value);
    if (root.value) p.set('root', root.value);
    if (viewState.type) p.set('sample', viewState.type);
    if (viewState.query) p.set('search', viewState.query);
    if (viewState.icicle) p.set('layout', 'icicle');
    return '?' + p.toString();
  }
  // push: a new entry (a profile loaded); else this one rewritten.
  function remember(push) {
    var a = address();
    if (a === location.search) return;
    if (push) history.pushState(null, '', a);
    else history.replaceState(null, '', a);
  }

  var profiles = {};
  // The recordings (CPU, wall clock), taken over the seconds given; the
  // rest are snapshots.
  var isCpu = function () { return name.value === 'profile' || name.value === 'wall'; };
  function sync() {
    var p = profiles[name.value];
    // style, not the hidden attribute, which the css's .field display beats.
    modeLabel.style.display = isCpu() ? 'none' : '';
    seconds.parentNode.style.display = !isCpu() && mode.value === 'now' ? 'none' : '';
    note.textContent = p && p.off ? p.off : p ? p.desc : '';
    var s = Math.max(1, parseInt(seconds.value, 10) || 1);
    // The raw profile, at the endpoints go tool pprof reads.
    download.href = '../' + encodeURIComponent(name.value) +
      (isCpu() ? '?seconds=' + s : mode.value === 'now' ? '?debug=0' : '?seconds=' + s);
  }
  name.addEventListener('change', sync);
  mode.addEventListener('change', sync);
  seconds.addEventListener('input', sync);

  function setError(msg) {
    error.textContent = msg;
    document.body.dataset.uiError = msg;
  }

  var timer = 0, loaded = 0, busy = null;
  // push: whether this load is a new history entry (not the first load,
  // nor one Back asked for).
  function load(push) {
    if (busy) busy.abort();
    var ctl = window.AbortController ? new AbortController() : null;
    busy = ctl;
    setError('');
    var q = 'name=' + encodeURIComponent(name.value), wait = 0;
    if (root.value) q += '&tagroot=' + encodeURIComponent(root.value);
    var s = parseInt(seconds.value, 10);
    if (isCpu() || mode.value !== 'now') {
      if (!(s >= 1 && s <= 3600)) {
        setError('seconds must be from 1 to 3600');
        return;
      }
      q += (isCpu() || mode.value === 'delta' ? '&seconds=' : '&diff=') + s;
      wait = s;
    }
    var until = Date.now() + wait * 1000;
    clearInterval(timer);
    var tick = function () {
      var left = Math.ceil((until - Date.now()) / 1000);
      countdown.textContent = left > 0 ? 'recording: ' + left + ' s left' : 'loading\u2026';
    };
    tick();
    timer = setInterval(tick, 250);
    document.body.dataset.loading = '1';
    fetch('data?' + q, { cache: 'no-store', signal: ctl ? ctl.signal : undefined }).then(function (r) {
      if (!r.ok) return r.text().then(function (t) { throw new Error(r.status + ': ' + t.trim()); });
      return r.json();
    }).then(function (data) {
      var h = pristine[0].cloneNode(true), m = pristine[1].cloneNode(true);
      document.querySelector('body > header').replaceWith(h);
      document.querySelector('body > main').replaceWith(m);
      Array.prototype.forEach.call(document.querySelectorAll('body > p.error'), function (p) { p.remove(); });
      delete document.body.dataset.ready;
      remember(push);
      window.cprofView(data, {
        initial: viewState,
        onState: function (v) {
          viewState = v;
          remember(false);
        }
      });
      offerLabels(data.labels || []);
      document.body.dataset.loaded = String(++loaded);
    }).catch(function (e) {
      if (e.name !== 'AbortError') setError(String(e.message || e));
    }).then(function () {
      if (busy !== ctl) return;
      busy = null;
      clearInterval(timer);
      countdown.textContent = '';
      delete document.body.dataset.loading;
    });
  }
  // The label keys of the profile drawn, the current choice kept.
  function offerLabels(keys) {
    var keep = root.value;
    while (root.options.length > 1) root.remove(1);
    keys.forEach(function (k) { root.appendChild(el('option', { value: k }, k)); });
    if (keep && keys.indexOf(keep) < 0) root.appendChild(el('option', { value: keep }, keep));
    root.value = keep;
    rootLabel.style.display = root.options.length > 1 ? '' : 'none';
  }
  // A snapshot redraws at once; a recording waits for Show.
  root.addEventListener('change', function () { if (!isCpu() && mode.value === 'now') load(true); });
  form.addEventListener('submit', function (ev) {
    ev.preventDefault();
    load(true);
  });
  window.addEventListener('popstate', function () {
    var p = new URLSearchParams(location.search);
    if (!profiles[p.get('profile')]) return;
    name.value = p.get('profile');
    mode.value = p.get('show') || 'now';
    if (p.get('seconds')) seconds.value = p.get('seconds');
    if (p.get('root')) offerLabels([p.get('root')]);
    root.value = p.get('root') || '';
    viewState = { type: p.get('sample') || '', query: p.get('search') || '', icicle: p.get('layout') === 'icicle' };
    sync();
    load(false);
  });

  fetch('profiles', { cache: 'no-store' }).then(function (r) {
    if (!r.ok) throw new Error(r.status + ': could not list the profiles');
    return r.json();
  }).then(function (list) {
    list.forEach(function (p) {
      profiles[p.name] = p;
      var label = p.name === 'profile' ? 'CPU (profile)' : p.name === 'wall' ? 'Wall clock (wall)' :
        p.name + (p.off ? ' (off)' : '');
      name.appendChild(el('option', { value: p.name }, label));
    });
    // A snapshot at once, so the page is not empty: the heap when it is
    // on, else the threads' stacks; the CPU profile waits to be asked.
    name.value = profiles.heap && !profiles.heap.off ? 'heap' : profiles.goroutine ? 'goroutine' : list[0].name;
    // Or what the address asks for.
    if (profiles[asked.get('profile')]) name.value = asked.get('profile');
    sync();
    document.body.dataset.profiles = String(list.length);
    load(false);
  }).catch(function (e) { setError(String(e.message || e)); });
})();
