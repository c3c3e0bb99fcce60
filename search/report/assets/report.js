(function () {
  'use strict';
  // Errors of any kind are written into the page (#js-errors, and the
  // body's data-js-errors count) so a headless test can assert on the DOM.
  var errBox = document.getElementById('js-errors');
  var nerr = 0;
  function fail(msg) {
    nerr++;
    document.body.setAttribute('data-js-errors', String(nerr));
    errBox.hidden = false;
    errBox.textContent += String(msg) + '\n';
  }
  window.addEventListener('error', function (e) {
    fail('error: ' + (e.message || e) + (e.filename ? ' at ' + e.filename + ':' + e.lineno : ''));
  });
  window.addEventListener('unhandledrejection', function (e) { fail('unhandled rejection: ' + e.reason); });
  document.addEventListener('securitypolicyviolation', function (e) {
    fail('blocked by the page policy: ' + e.violatedDirective + ' ' + e.blockedURI);
  });
  var consoleError = console.error;
  console.error = function () {
    fail('console.error: ' + Array.prototype.join.call(arguments, ' '));
    return consoleError.apply(console, arguments);
  };

  var data = null;
  var byId = Object.create(null);
  var detail = document.getElementById('detail');
  var view = 'diff';

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function x(v) { return v === null || v === undefined ? '–' : v.toFixed(2) + '×'; }
  function dur(s) {
    if (!s && s !== 0) return '–';
    if (s >= 1) return s.toPrecision(3) + ' s';
    if (s >= 1e-3) return (s * 1e3).toPrecision(3) + ' ms';
    if (s >= 1e-6) return (s * 1e6).toPrecision(3) + ' µs';
    return (s * 1e9).toPrecision(3) + ' ns';
  }
  function si(v, unit) {
    if (!v) return '–';
    var p = [[1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
    for (var i = 0; i < p.length; i++) if (Math.abs(v) >= p[i][0]) return (v / p[i][0]).toPrecision(3) + ' ' + p[i][1] + unit;
    return v.toPrecision(3) + ' ' + unit;
  }
  function idButton(id) {
    var b = el('button', null, '#' + id);
    b.type = 'button';
    b.setAttribute('data-id', id);
    return b;
  }

  function stat(grid, label, value) {
    var d = el('div');
    d.appendChild(el('dt', null, label));
    d.appendChild(el('dd', null, value));
    grid.appendChild(d);
  }

  function codePane(n) {
    var pre = el('div', 'code');
    var lines = n.code.replace(/\n$/, '').split('\n');
    for (var i = 0; i < lines.length; i++) {
      var l = el('div', 'l');
      l.appendChild(el('span', 'n', i + 1));
      l.appendChild(el('span', 't', lines[i]));
      pre.appendChild(l);
    }
    return pre;
  }

  function diffPane(n) {
    if (!n.diff_base) return el('p', 'empty', 'A root node: there is no parent to diff against.');
    if (!n.diff.length) return el('p', 'empty', 'Identical to its parent #' + n.diff_base + '.');
    var pre = el('div', 'code');
    var adds = 0, dels = 0;
    n.diff.forEach(function (h) {
      pre.appendChild(el('div', 'hh', h.h));
      var o = h.o, nn = h.n;
      if (h.l && h.l.length) {
        if (o === 0) o = 1;
        if (nn === 0) nn = 1;
      }
      (h.l || []).forEach(function (s) {
        var op = s.charAt(0), text = s.slice(1);
        var cls = op === '+' ? 'add' : op === '-' ? 'del' : 'ctx';
        var l = el('div', 'l ' + cls);
        l.appendChild(el('span', 'n n2', op === '+' ? '' : o));
        l.appendChild(el('span', 'n n2', op === '-' ? '' : nn));
        l.appendChild(el('span', 't', text));
        if (op !== '+') o++;
        if (op !== '-') nn++;
        if (op === '+') adds++;
        if (op === '-') dels++;
        pre.appendChild(l);
      });
    });
    var wrap = el('div');
    wrap.appendChild(el('div', 'sub-meta', 'against parent #' + n.diff_base + ': +' + adds + ' −' + dels + ' lines'));
    wrap.appendChild(pre);
    return wrap;
  }

  function renderDetail(n) {
    detail.textContent = '';
    var head = el('div', 'dh');
    head.appendChild(el('h2', null, 'Node #' + n.id));
    head.appendChild(el('span', 'badge v-' + (n.verdict || 'pending').replace(/[^A-Za-z0-9_-]/g, '_'), n.verdict || 'pending'));
    if (n.best) head.appendChild(el('span', 'badge best', '★ best'));
    else if (n.lineage) head.appendChild(el('span', 'badge lin', 'best lineage'));
    detail.appendChild(head);
    var meta = [n.operator && ('by ' + n.operator), n.language, 'depth ' + n.depth,
      data.islands && ('island ' + n.island), n.eval_seq && ('evaluation ' + n.eval_seq),
      n.created && ('created ' + n.created), n.finished && ('finished ' + n.finished)].filter(Boolean);
    detail.appendChild(el('div', 'sub-meta', meta.join(' · ')));

    var nav = el('div', 'nav');
    nav.appendChild(el('span', 'lbl', n.parents.length ? 'parent' + (n.parents.length > 1 ? 's' : '') : 'root node'));
    n.parents.forEach(function (p) { if (byId[p]) nav.appendChild(idButton(p)); else nav.appendChild(el('span', 'lbl', '#' + p + ' (not in run)')); });
    if (n.children.length) {
      nav.appendChild(el('span', 'lbl', ' · children'));
      n.children.slice(0, 16).forEach(function (c) { nav.appendChild(idButton(c)); });
      if (n.children.length > 16) nav.appendChild(el('span', 'lbl', '+' + (n.children.length - 16) + ' more'));
    }
    detail.appendChild(nav);

    if (n.message) detail.appendChild(el('pre', 'msg', n.message));

    var grid = el('dl', 'stats');
    var baseline = data.baseline ? 'fitness (vs ' + data.baseline + ')' : 'fitness';
    stat(grid, baseline, n.verdict === 'pass' ? x(n.fitness) : n.verdict ? '0' : '–');
    stat(grid, 'vs start', x(n.speedup_start));
    stat(grid, 'vs eager', x(n.speedup_eager));
    stat(grid, 'vs torch.compile', x(n.speedup_compile));
    stat(grid, '% of SOL', n.pct_of_sol === null ? '–' : n.pct_of_sol.toFixed(1) + '%');
    stat(grid, 'SOL score', n.sol_score === null ? '–' : n.sol_score.toFixed(3));
    var t = n.timing;
    stat(grid, 'median', t ? dur(t.median_s) : '–');
    stat(grid, 'p10 – p90', t && t.p10_s && t.p90_s ? dur(t.p10_s) + ' – ' + dur(t.p90_s) : '–');
    stat(grid, 'CV', t && t.cv ? (100 * t.cv).toFixed(1) + '%' + (t.iters ? ' · ' + t.iters + ' it' : '') : (t && t.iters ? t.iters + ' it' : '–'));
    stat(grid, 'speed of light', dur(n.t_sol_s));
    stat(grid, 'attained', t && n.flops && t.median_s ? si(n.flops / t.median_s, 'FLOP/s') : '–');
    stat(grid, 'bandwidth', t && n.bytes && t.median_s ? si(n.bytes / t.median_s, 'B/s') : '–');
    stat(grid, 'work', n.flops || n.bytes ? si(n.flops, 'FLOP') + ' · ' + si(n.bytes, 'B') : '–');
    stat(grid, 'cost', (n.eval_s ? 'eval ' + dur(n.eval_s) : '') + (n.operator_s ? ' op ' + dur(n.operator_s) : '') || '–');
    stat(grid, 'tokens', n.tokens ? String(n.tokens) : '–');
    detail.appendChild(grid);

    if (n.checks.length) {
      var passed = n.checks.filter(function (c) { return c.passed; }).length;
      detail.appendChild(el('div', 'section-t', 'Checks · ' + passed + '/' + n.checks.length + ' passed'));
      var ul = el('ul', 'checks');
      n.checks.forEach(function (c) {
        var li = el('li');
        li.appendChild(el('span', c.passed ? 'ok' : 'no', c.passed ? '✓' : '✗'));
        li.appendChild(el('span', null, c.name));
        if (c.detail) li.appendChild(el('span', 'cd', '— ' + c.detail));
        ul.appendChild(li);
      });
      detail.appendChild(ul);
    }
    if (n.diagnosis) {
      detail.appendChild(el('div', 'section-t', 'Diagnosis'));
      detail.appendChild(el('div', 'notes', n.diagnosis));
    }
    if (n.notes) {
      detail.appendChild(el('div', 'section-t', 'Notes'));
      detail.appendChild(el('div', 'notes', n.notes));
    }

    var tabs = el('div', 'tabs');
    var pane = el('div', 'pane');
    [['diff', n.diff_base ? 'Diff vs #' + n.diff_base : 'Diff'], ['code', 'Code' + (n.language ? ' (' + n.language + ')' : '')]].forEach(function (tb) {
      var b = el('button', view === tb[0] ? 'on' : null, tb[1]);
      b.type = 'button';
      b.addEventListener('click', function () { view = tb[0]; renderDetail(n); });
      tabs.appendChild(b);
    });
    detail.appendChild(tabs);
    pane.appendChild(view === 'diff' ? diffPane(n) : codePane(n));
    detail.appendChild(pane);
  }

  function revealInTree() {
    var box = document.getElementById('tree-scroll');
    var g = box && box.querySelector('.node.sel .mark, .node.sel path');
    if (!g || !g.getBBox) return;
    var b = g.getBBox();
    var pad = 40;
    if (b.x < box.scrollLeft + pad || b.x > box.scrollLeft + box.clientWidth - pad) box.scrollLeft = Math.max(0, b.x - box.clientWidth / 2);
    if (b.y < box.scrollTop + pad || b.y > box.scrollTop + box.clientHeight - pad) box.scrollTop = Math.max(0, b.y - box.clientHeight / 2);
  }

  function select(id, reveal) {
    var n = byId[id];
    if (!n) return;
    var all = document.querySelectorAll('[data-id]');
    for (var i = 0; i < all.length; i++) {
      var on = all[i].getAttribute('data-id') === id && !all[i].closest('#detail');
      all[i].classList.toggle('sel', on);
    }
    renderDetail(n);
    document.body.setAttribute('data-selected', id);
    if (reveal) revealInTree();
    try { history.replaceState(null, '', '#node=' + encodeURIComponent(id)); } catch (e) { /* file: URLs may refuse; the selection still works */ }
  }

  function init() {
    data = JSON.parse(document.getElementById('kv-data').textContent);
    data.nodes.forEach(function (n) { byId[n.id] = n; });
    document.addEventListener('click', function (e) {
      var t = e.target.closest && e.target.closest('[data-id]');
      if (t) select(t.getAttribute('data-id'), !!t.closest('#detail, .charts, .top-table'));
    });
    document.addEventListener('keydown', function (e) {
      if ((e.key === 'Enter' || e.key === ' ') && e.target.classList && e.target.classList.contains('node')) {
        e.preventDefault();
        select(e.target.getAttribute('data-id'), false);
      }
    });
    // A big tree scrolls at full size; "Overview" scales it to fit the box.
    var box = document.getElementById('tree-scroll');
    var fit = document.getElementById('tree-fit');
    if (box && fit && (box.scrollHeight > box.clientHeight + 4 || box.scrollWidth > box.clientWidth + 4)) {
      fit.hidden = false;
      fit.addEventListener('click', function () {
        var on = box.classList.toggle('fit');
        fit.textContent = on ? 'Actual size' : 'Overview';
        if (!on) revealInTree();
      });
    }
    var want = '';
    try { want = decodeURIComponent(location.hash.replace(/^#node=/, '')); } catch (e) { want = ''; }
    if (!byId[want]) want = data.best || (data.nodes.length ? data.nodes[0].id : '');
    if (want) select(want, true);
    document.body.setAttribute('data-nodes', String(data.nodes.length));
  }

  // #selftest (used by the headless browser test, harmless otherwise) clicks
  // every tree node, chart dot and table row, and both tabs, and records in
  // the DOM whether each click selected what it should.
  function selfTest() {
    var targets = document.querySelectorAll('#tree .node, .dots [data-id], .top-table [data-id]');
    var ok = 0, bad = [];
    for (var i = 0; i < targets.length; i++) {
      var id = targets[i].getAttribute('data-id');
      targets[i].dispatchEvent(new MouseEvent('click', { bubbles: true }));
      var h = detail.querySelector('h2');
      if (document.body.getAttribute('data-selected') === id && h && h.textContent === 'Node #' + id) ok++;
      else bad.push(id);
    }
    var tabs = detail.querySelectorAll('.tabs button');
    var tabsOK = tabs.length === 2;
    if (tabsOK) {
      tabs[1].click();
      tabsOK = !!detail.querySelector('.pane .code .l .t') && view === 'code';
      detail.querySelectorAll('.tabs button')[0].click();
      tabsOK = tabsOK && view === 'diff';
    }
    document.body.setAttribute('data-selftest', (bad.length || !tabsOK ? 'fail ' : 'ok ') + ok + '/' + targets.length +
      (bad.length ? ' missed ' + bad.slice(0, 5).join(',') : '') + (tabsOK ? '' : ' tabs'));
  }

  try {
    var selfTesting = location.hash === '#selftest'; // before init rewrites the hash
    init();
    if (selfTesting) selfTest();
    document.body.setAttribute('data-ready', '1');
  } catch (e) {
    fail('init: ' + (e && e.stack || e));
  }
})();
