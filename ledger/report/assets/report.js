// autoinfer ledger report: builds the page from the report's JSON with
// Chart.js. Every number shown comes from that JSON; the page computes only
// the Pareto front of the axes the reader picks (the rule ledger.Pareto
// uses) and formats numbers. Text from the ledger goes in as text nodes,
// never as markup.
(function () {
  'use strict';

  const data = JSON.parse(document.getElementById('report-data').textContent);
  const palette = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#8cd17d',
    '#499894', '#d37295', '#86bcb6', '#f1ce63', '#a0cbe8', '#79706e'];
  const FRONT = '#d62728';

  Chart.register(ChartDataLabels);
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.family = getComputedStyle(document.documentElement).fontFamily;
  Chart.defaults.color = '#475467';
  Chart.defaults.plugins.datalabels.display = false;
  Chart.defaults.plugins.legend.labels.usePointStyle = true;
  Chart.defaults.plugins.legend.labels.boxHeight = 7;

  const rows = data.rows;
  const byId = new Map(rows.map((r) => [r.id, r]));
  const colorOf = new Map(rows.map((r, i) => [r.id, palette[i % palette.length]]));
  const direction = new Map(data.metrics.map((m) => [m.name, m.direction]));
  const okRows = rows.filter((r) => r.status === 'ok');

  // el builds an element; strings become text nodes.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'style') e.style.cssText = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  function fmt(v) {
    if (v === null || v === undefined || Number.isNaN(v)) return '–';
    const a = Math.abs(v);
    if (a === 0) return '0';
    if (Number.isInteger(v)) return v.toLocaleString('en-US');
    if (a >= 1000) return v.toLocaleString('en-US', { maximumFractionDigits: 0 });
    if (a >= 100) return v.toFixed(1);
    if (a >= 1) return v.toFixed(2);
    return v.toPrecision(3);
  }
  const pct = (v) => (v === null || v === undefined ? '–' : (v * 100).toFixed(1) + '%');
  // short turns a matrix trial's name ("quickstart/router.policy=cache_aware,
  // workload.arrival.request_rate=20") into its settings with the last key of
  // each path ("policy=cache_aware request_rate=20"); other names stay.
  function short(name) {
    const i = name.indexOf('/');
    if (i < 0) return name;
    return name.slice(i + 1).split(',').map((s) => {
      const eq = s.indexOf('=');
      return eq < 0 ? s : s.slice(0, eq).split('.').pop() + s.slice(eq);
    }).join(' ');
  }
  const shortName = (r) => short(r.name);
  const plain = (v) => String(Number(v.toPrecision(4))); // 4 significant digits, no trailing zeros
  const tag = (r) => '#' + r.id + ' ' + shortName(r);
  const swatch = (id) => el('span', { class: 'swatch', style: 'background:' + colorOf.get(id) });
  const better = (m) => (direction.get(m) === 'max' ? 'higher is better' : 'lower is better');

  function option(value, text, selected) {
    const o = el('option', { value: value }, text);
    o.selected = !!selected;
    return o;
  }

  // ---- header, summary, notes -------------------------------------------

  function renderHeader() {
    document.getElementById('title').textContent = data.title;
    const parts = [data.selection, 'ledger ' + (data.ledger || '(unnamed)')];
    if (data.generated) parts.push('generated ' + data.generated);
    document.getElementById('subtitle').textContent = parts.join(' · ');
    document.getElementById('footer').textContent = 'Made by autoinfer ledger report. Charts drawn with Chart.js 4.6.1 and ' +
      'chartjs-plugin-datalabels 2.2.0 (MIT licence), inlined: this file needs no network.';
  }

  function stat(k, v, s) {
    return el('div', { class: 'stat' }, el('div', { class: 'k' }, k), el('div', { class: v.length > 16 ? 'v long' : 'v' }, v),
      s ? el('div', { class: 's', title: s }, s) : null);
  }

  function bestOf(metric) {
    const cand = okRows.filter((r) => !r.stale && r.requests > 0);
    if (!cand.length) return null;
    const max = direction.get(metric) === 'max';
    return cand.reduce((a, b) => ((max ? b.metrics[metric] > a.metrics[metric] : b.metrics[metric] < a.metrics[metric]) ? b : a));
  }

  function renderSummary() {
    const box = document.getElementById('summary');
    const failed = rows.filter((r) => r.status !== 'ok').length;
    const stale = rows.filter((r) => r.stale).length;
    const reqs = rows.reduce((s, r) => s + r.requests, 0);
    box.append(stat('Trials', String(rows.length), okRows.length + ' ok · ' + failed + ' failed or aborted · ' + stale + ' stale'));
    box.append(stat('Requests measured', reqs.toLocaleString('en-US'), 'per-request records in the ledger'));
    const tp = bestOf('output_throughput');
    if (tp) box.append(stat('Best output throughput', fmt(tp.metrics.output_throughput) + ' tok/s', tag(tp)));
    const tt = bestOf('p99_ttft_ms');
    if (tt) box.append(stat('Best p99 TTFT', fmt(tt.metrics.p99_ttft_ms) + ' ms', tag(tt)));
    const slo = data.curves.slo;
    box.append(stat('Goodput SLO', slo ? sloText(slo) : 'none', slo ? 'from ' + slo.source + ', knee at ' + plain(data.curves.attainment * 100) + '% attainment' : data.curves.no_slo));
    const notes = document.getElementById('notes');
    for (const n of data.notes) notes.append(el('div', { class: 'note' }, n));
  }

  function sloText(slo) {
    const parts = [];
    if (slo.ttft_ms) parts.push('TTFT ≤ ' + plain(slo.ttft_ms) + ' ms');
    if (slo.tpot_ms) parts.push('TPOT ≤ ' + plain(slo.tpot_ms) + ' ms');
    if (slo.e2el_ms) parts.push('E2EL ≤ ' + plain(slo.e2el_ms) + ' ms');
    return parts.join(', ');
  }

  // ---- trials table -----------------------------------------------------

  const metricCol = (m, label) => ({ key: m, label: label, num: true, get: (r) => r.metrics[m] });
  function trialColumns() {
    const cols = [
      { key: 'id', label: '#', num: true, get: (r) => r.id, cell: (r) => [swatch(r.id), String(r.id)] },
      { key: 'name', label: 'trial', get: (r) => r.name, cls: 'name', cell: (r) => el('span', { title: r.name }, shortName(r)) },
      { key: 'status', label: 'status', get: (r) => r.status, cell: statusCell },
      { key: 'policy', label: 'policy', get: (r) => r.identity.policy },
      { key: 'topology', label: 'topology', get: (r) => r.identity.topology },
      { key: 'rate', label: 'rate req/s', num: true, get: (r) => r.identity.rate || null },
      metricCol('completed', 'completed'),
      metricCol('failed', 'failed'),
      metricCol('output_throughput', 'output tok/s'),
      metricCol('request_throughput', 'req/s'),
    ];
    if (rows.some((r) => r.metrics.request_goodput > 0)) cols.push(metricCol('request_goodput', 'goodput req/s'));
    cols.push(metricCol('p50_ttft_ms', 'p50 TTFT ms'), metricCol('p99_ttft_ms', 'p99 TTFT ms'),
      metricCol('p50_tpot_ms', 'p50 TPOT ms'), metricCol('p99_tpot_ms', 'p99 TPOT ms'),
      metricCol('p99_e2el_ms', 'p99 E2EL ms'),
      { key: 'prefix_cache_hit_rate', label: 'cache hits', num: true, get: (r) => r.metrics.prefix_cache_hit_rate, fmt: pct });
    return cols;
  }

  function statusCell(r) {
    const out = [el('span', { class: 'badge ' + r.status, title: r.failure || null }, r.failure_kind || r.status)];
    if (r.stale) out.push(' ', el('span', { class: 'badge stale', title: r.stale_reason }, 'stale'));
    return out;
  }

  function renderTable() {
    const table = document.getElementById('trials-table');
    const cols = trialColumns();
    const state = { key: 'id', dir: 1 };
    const head = el('tr');
    for (const c of cols) {
      head.append(el('th', { class: c.num ? 'num' : null, 'data-key': c.key, onclick: () => sortBy(c.key) }, c.label));
    }
    table.tHead.append(head);
    function sortBy(key) {
      state.dir = state.key === key ? -state.dir : 1;
      state.key = key;
      draw();
    }
    function draw() {
      const col = cols.find((c) => c.key === state.key);
      const sorted = rows.slice().sort((a, b) => {
        const x = col.get(a), y = col.get(b);
        if (x === y) return a.id - b.id;
        if (x === null || x === undefined) return 1;
        if (y === null || y === undefined) return -1;
        return (typeof x === 'number' ? x - y : String(x).localeCompare(String(y))) * state.dir;
      });
      for (const th of head.children) {
        th.setAttribute('aria-sort', th.dataset.key === state.key ? (state.dir > 0 ? 'ascending' : 'descending') : 'none');
      }
      const body = table.tBodies[0];
      body.replaceChildren();
      for (const r of sorted) {
        const tr = el('tr', { class: [r.status !== 'ok' ? 'failed' : '', r.stale ? 'stale' : ''].join(' ').trim() || null, 'data-id': r.id });
        for (const c of cols) {
          let content;
          if (c.cell) content = c.cell(r);
          else if (r.status !== 'ok' && c.key in r.metrics) content = '–';
          else {
            const v = c.get(r);
            content = c.fmt ? c.fmt(v) : c.num ? fmt(v) : v;
          }
          tr.append(el('td', { class: [c.num ? 'num' : '', c.cls || ''].join(' ').trim() || null }, content));
        }
        body.append(tr);
      }
    }
    draw();
  }

  // ---- Pareto front -----------------------------------------------------

  // paretoFront marks the points no other eligible point dominates (at least
  // as good on both axes, strictly better on one); stale points are not
  // eligible. The same one-pass rule as ledger's markFront.
  function paretoFront(points, xd, yd) {
    const ord = (d, a, b) => (d === 'max' ? b - a : a - b);
    const betterThan = (d, a, b) => (d === 'max' ? a > b : a < b);
    const sorted = points.slice().sort((a, b) => ord(xd, a.x, b.x) || ord(yd, a.y, b.y) || a.id - b.id);
    const front = new Set();
    let haveBest = false, haveGroup = false, bestY = 0, groupX = 0, groupY = 0;
    for (const p of sorted) {
      if (p.stale) continue;
      if (!haveGroup || p.x !== groupX) {
        if (haveGroup && (!haveBest || betterThan(yd, groupY, bestY))) { bestY = groupY; haveBest = true; }
        groupX = p.x; groupY = p.y; haveGroup = true;
      }
      const dominated = (haveBest && !betterThan(yd, p.y, bestY)) || betterThan(yd, groupY, p.y);
      if (!dominated) front.add(p.id);
    }
    return sorted.filter((p) => front.has(p.id));
  }

  function renderPareto() {
    const xs = document.getElementById('pareto-x'), ys = document.getElementById('pareto-y');
    for (const m of data.metrics) {
      xs.append(option(m.name, m.name, m.name === data.default_x));
      ys.append(option(m.name, m.name, m.name === data.default_y));
    }
    const chart = new Chart(document.getElementById('pareto-chart'), {
      type: 'scatter',
      data: { datasets: [] },
      options: {
        layout: { padding: { top: 18, right: 30 } },
        plugins: {
          legend: { display: false },
          tooltip: { callbacks: { title: (items) => tag(items[0].raw.row), label: paretoTooltip } },
        },
      },
    });
    function draw() {
      const x = xs.value, y = ys.value;
      const pts = okRows.map((r) => ({ id: r.id, x: r.metrics[x], y: r.metrics[y], stale: r.stale, row: r }));
      const front = paretoFront(pts, direction.get(x), direction.get(y));
      const onFront = new Set(front.map((p) => p.id));
      const labels = {
        display: true, align: 'top', anchor: 'center', offset: 7, clamp: true,
        font: { size: 11, weight: '600' }, color: '#344054',
        formatter: (v, c) => clusterLabel(v, c.chart, pts),
      };
      chart.data.datasets = [
        {
          label: 'Pareto front', data: front, showLine: true, borderColor: FRONT, borderWidth: 2.5,
          pointRadius: 0, pointHoverRadius: 0, order: 3, datalabels: { display: false },
        },
        {
          label: 'rows', data: pts.filter((p) => !p.stale), order: 1, datalabels: labels,
          pointRadius: 8, pointHoverRadius: 10,
          backgroundColor: (c) => (c.raw ? colorOf.get(c.raw.id) : palette[0]),
          borderColor: (c) => (c.raw && onFront.has(c.raw.id) ? FRONT : '#ffffff'),
          borderWidth: (c) => (c.raw && onFront.has(c.raw.id) ? 3 : 1.5),
        },
        {
          label: 'stale rows', data: pts.filter((p) => p.stale), order: 2, datalabels: labels,
          pointRadius: 7, pointHoverRadius: 9, backgroundColor: '#ffffff', borderWidth: 2.5,
          borderColor: (c) => (c.raw ? colorOf.get(c.raw.id) : palette[0]),
        },
      ];
      chart.options.scales = {
        x: { title: { display: true, text: x + ' (' + better(x) + ')' }, grace: '5%' },
        y: { title: { display: true, text: y + ' (' + better(y) + ')' }, grace: '8%' },
      };
      chart.update();
      const box = document.getElementById('pareto-front');
      box.dataset.front = front.map((p) => p.id).join(',');
      box.replaceChildren(front.length ? 'On the front, best ' + x + ' first: ' : 'No ok, current row to put on a front.');
      front.forEach((p, i) => box.append(i ? ', ' : '', swatch(p.id), tag(p.row) + ' (' + fmt(p.x) + ', ' + fmt(p.y) + ')'));
    }
    // clusterLabel names a point, or, where points lie within a label's
    // width of each other, names them all once at the lowest id among them,
    // so every point is named and no label covers another.
    function clusterLabel(v, chart, all) {
      const px = (p) => [chart.scales.x.getPixelForValue(p.x), chart.scales.y.getPixelForValue(p.y)];
      const [x0, y0] = px(v);
      const near = all.filter((p) => { const [x, y] = px(p); return Math.abs(x - x0) < 26 && Math.abs(y - y0) < 14; });
      if (near.some((p) => p.id < v.id)) return null;
      return near.map((p) => '#' + p.id).join(' ');
    }
    function paretoTooltip(item) {
      const p = item.raw, r = p.row;
      const lines = [xs.value + ': ' + fmt(p.x), ys.value + ': ' + fmt(p.y), r.identity.topology + ', ' + r.identity.policy];
      if (r.stale) lines.push('stale: ' + r.stale_reason);
      return lines;
    }
    xs.addEventListener('change', draw);
    ys.addEventListener('change', draw);
    draw();
  }

  // ---- latency distributions --------------------------------------------

  function renderDistributions() {
    const note = document.getElementById('cdf-note');
    const slo = data.curves.slo || {};
    const charts = [];
    for (const [key, title, sloMs] of [['ttft', 'TTFT', slo.ttft_ms], ['tpot', 'TPOT', slo.tpot_ms], ['e2el', 'E2EL', slo.e2el_ms]]) {
      const datasets = data.cdfs.filter((c) => c[key].length).map((c) => ({
        label: tag(byId.get(c.id)) + ' (n=' + c.n[key] + ')', trialId: c.id,
        // The CDF is 0 below the fastest request: start the curve there.
        data: [{ x: c[key][0][0], y: 0 }].concat(c[key].map((p) => ({ x: p[0], y: p[1] }))),
        borderColor: colorOf.get(c.id), backgroundColor: colorOf.get(c.id),
        borderWidth: 2, pointRadius: 0, pointHoverRadius: 4, stepped: 'after', showLine: true,
      }));
      if (sloMs && datasets.length) {
        datasets.push({
          label: 'SLO ' + plain(sloMs) + ' ms', data: [{ x: sloMs, y: 0 }, { x: sloMs, y: 1 }], showLine: true,
          borderColor: FRONT, borderDash: [6, 4], borderWidth: 1.5, pointRadius: 0, pointHoverRadius: 0,
        });
      }
      charts.push(new Chart(document.getElementById('cdf-' + key), {
        type: 'scatter',
        data: { datasets: datasets },
        options: {
          plugins: {
            title: { display: true, text: title + ' (ms)', font: { size: 13, weight: '600' } },
            legend: { display: false },
            tooltip: { callbacks: { label: (it) => it.dataset.label + ': ' + pct(it.raw.y) + ' ≤ ' + fmt(it.raw.x) + ' ms' } },
          },
          interaction: { mode: 'nearest', intersect: false },
          scales: {
            x: { type: 'linear', title: { display: true, text: title + ' ms' } },
            y: { min: 0, max: 1, title: { display: true, text: 'share of requests' }, ticks: { callback: (v) => Math.round(v * 100) + '%' } },
          },
        },
      }));
    }
    // One legend for the three charts: a click hides or shows a trial in all.
    const legend = document.getElementById('cdf-legend');
    for (const c of data.cdfs) {
      const item = el('button', { type: 'button', class: 'legend-item', 'data-id': c.id, title: byId.get(c.id).name }, swatch(c.id), tag(byId.get(c.id)));
      item.addEventListener('click', () => {
        const off = item.classList.toggle('off');
        for (const ch of charts) {
          ch.data.datasets.forEach((d, i) => { if (d.trialId === c.id) ch.setDatasetVisibility(i, !off); });
          ch.update();
        }
      });
      legend.append(item);
    }
    if (slo.ttft_ms || slo.tpot_ms || slo.e2el_ms) legend.append(el('span', { class: 'legend-item static' }, el('span', { class: 'line dashed' }), 'SLO bound'));
    const missing = okRows.filter((r) => !data.cdfs.some((c) => c.id === r.id));
    note.textContent = data.cdfs.length ? '' : 'No ok trial has per-request records.';
    if (missing.length) note.textContent += ' Without request records (not drawn): ' + missing.map(tag).join(', ') + '.';
    document.getElementById('cdf-log').addEventListener('change', (e) => {
      for (const c of charts) {
        c.options.scales.x.type = e.target.checked ? 'logarithmic' : 'linear';
        c.update();
      }
    });
  }

  // ---- sweep curves -----------------------------------------------------

  function renderCurves() {
    const cv = data.curves;
    const sel = document.getElementById('curve-metric');
    for (const m of ['p50', 'p90', 'p99']) {
      for (const k of ['ttft', 'tpot', 'e2el']) sel.append(option(m + '_' + k + '_ms', m + ' ' + k.toUpperCase() + ' ms', m === 'p99' && k === 'ttft'));
    }
    const sloBox = document.getElementById('curve-slo');
    if (cv.slo) {
      sloBox.textContent = 'Goodput: requests per second meeting every bound (' + sloText(cv.slo) + ', from ' + cv.slo.source +
        '), recomputed from each row\'s requests. A rate meets the SLOs when at least ' + plain(cv.attainment * 100) + '%' +
        ' of its requests do; the knee (◆, dashed line) is the highest rate that meets them.';
    } else {
      sloBox.className = 'callout missing';
      sloBox.textContent = 'No SLO applies (' + cv.no_slo + '), so goodput and the knee are unknown: no knee is marked and the ' +
        'right-hand chart shows throughput. Give one with `autoinfer ledger report --goodput ttft:MS,tpot:MS`.';
    }
    const seriesColor = (i) => palette[i % palette.length];
    const pointsOf = (s, y) => s.points.map((p) => ({ x: p.rate, y: y(p), id: p.id, knee: p.id === s.knee, meets: p.meets_slo }));
    const pointStyle = (c) => (c.raw && c.raw.knee ? 'rectRot' : 'circle');
    const pointRadius = (c) => (c.raw && c.raw.knee ? 9 : 5);
    const fill = (i) => (c) => (c.raw && byId.get(c.raw.id).stale ? '#ffffff' : seriesColor(i));
    function kneeLine(s, i, top) {
      const k = s.points.find((p) => p.id === s.knee);
      if (!k) return null;
      return {
        label: 'knee', data: [{ x: k.rate, y: 0 }, { x: k.rate, y: top }], showLine: true, borderColor: seriesColor(i),
        borderDash: [4, 4], borderWidth: 1.2, pointRadius: 0, pointHoverRadius: 0, isKnee: true,
        datalabels: { display: (c) => c.dataIndex === 1, formatter: () => 'knee ' + plain(k.rate) + ' req/s', align: 'right', anchor: 'end', color: seriesColor(i), font: { weight: '600', size: 11 } },
      };
    }
    const options = (yTitle) => ({
      layout: { padding: { top: 10, right: 20 } },
      plugins: {
        legend: { position: 'bottom', labels: { pointStyle: 'circle', filter: (item, d) => !d.datasets[item.datasetIndex].isKnee && !d.datasets[item.datasetIndex].aux } },
        tooltip: { filter: (it) => !it.dataset.isKnee, callbacks: { label: (it) => it.dataset.label + ': ' + fmt(it.raw.y) + ' at ' + fmt(it.raw.x) + ' req/s (#' + it.raw.id + ')' } },
      },
      scales: { x: { title: { display: true, text: 'offered request rate (req/s)' }, grace: '5%', beginAtZero: true }, y: { title: { display: true, text: yTitle }, beginAtZero: true, grace: '10%' } },
    });
    const latChart = new Chart(document.getElementById('curve-latency'), { type: 'scatter', data: { datasets: [] }, options: options('') });
    const gpChart = new Chart(document.getElementById('curve-goodput'), {
      type: 'scatter', data: { datasets: [] }, options: options(cv.slo ? 'goodput and throughput (req/s)' : 'request throughput (req/s)'),
    });
    function drawLatency() {
      const m = sel.value;
      const ds = cv.series.map((s, i) => ({
        label: short(s.label), data: pointsOf(s, (p) => byId.get(p.id).metrics[m]), showLine: true,
        borderColor: seriesColor(i), backgroundColor: fill(i), pointBorderColor: seriesColor(i), pointBorderWidth: 2,
        pointStyle: pointStyle, pointRadius: pointRadius, pointHoverRadius: 8, borderWidth: 2,
      }));
      const top = Math.max(1, ...ds.flatMap((d) => d.data.map((p) => p.y))) * 1.05;
      cv.series.forEach((s, i) => ds.push(kneeLine(s, i, top)));
      const fam = m.split('_')[1];
      const sloMs = cv.slo && cv.slo[fam + '_ms'];
      if (sloMs && cv.series.length) {
        const rates = cv.series.flatMap((s) => s.points.map((p) => p.rate));
        ds.push({
          label: 'SLO ' + plain(sloMs) + ' ms', data: [{ x: 0, y: sloMs }, { x: Math.max(...rates) * 1.05, y: sloMs }], showLine: true,
          borderColor: FRONT, borderDash: [6, 4], borderWidth: 1.5, pointRadius: 0, pointHoverRadius: 0,
        });
      }
      latChart.data.datasets = ds.filter(Boolean);
      latChart.options.scales.y.title.text = m + ' (' + better(m) + ')';
      latChart.update();
    }
    function drawGoodput() {
      const ds = [];
      cv.series.forEach((s, i) => {
        if (cv.slo) {
          ds.push({
            label: short(s.label) + ' goodput', data: pointsOf(s, (p) => p.goodput), showLine: true, borderColor: seriesColor(i),
            backgroundColor: fill(i), pointBorderColor: seriesColor(i), pointBorderWidth: 2, pointStyle: pointStyle, pointRadius: pointRadius, borderWidth: 2,
          });
        }
        ds.push({
          label: short(s.label) + ' throughput', data: pointsOf(s, (p) => byId.get(p.id).metrics.request_throughput), showLine: true,
          borderColor: seriesColor(i), backgroundColor: '#ffffff', borderDash: cv.slo ? [5, 4] : [], borderWidth: cv.slo ? 1.3 : 2,
          pointRadius: cv.slo ? 3 : 5, pointBorderColor: seriesColor(i),
        });
      });
      const rates = cv.series.flatMap((s) => s.points.map((p) => p.rate));
      if (rates.length) {
        const hi = Math.max(...rates) * 1.05;
        ds.push({ label: 'offered rate', aux: true, data: [{ x: 0, y: 0 }, { x: hi, y: hi }], showLine: true, borderColor: '#c0c6d0', borderDash: [2, 3], borderWidth: 1, pointRadius: 0, pointHoverRadius: 0 });
        const top = Math.max(1, ...ds.flatMap((d) => d.data.map((p) => p.y || 0))) * 1.05;
        cv.series.forEach((s, i) => ds.push(kneeLine(s, i, top)));
      }
      gpChart.data.datasets = ds.filter(Boolean);
      gpChart.update();
    }
    sel.addEventListener('change', drawLatency);
    drawLatency();
    drawGoodput();
    const knees = document.getElementById('knees');
    cv.series.forEach((s, i) => {
      knees.append(el('li', { 'data-knee': String(s.knee) }, el('span', { class: 'swatch', style: 'background:' + seriesColor(i) }),
        el('strong', { title: s.label }, short(s.label)), ': ' + s.knee_note + (s.points.length === 1 ? ' (one rate tried: this sweep does not vary the rate)' : '')));
    });
    if (!cv.series.length) knees.append(el('li', {}, 'No ok row has a finite offered request rate, so there is no curve.'));
    if (cv.unplaced.length) {
      knees.append(el('li', {}, 'Not on a curve (no finite offered rate): ' + cv.unplaced.map((id) => tag(byId.get(id))).join(', ')));
    }
  }

  // ---- bootstrap comparison ---------------------------------------------

  function renderCompare() {
    const as = document.getElementById('compare-a'), bs = document.getElementById('compare-b');
    const head = document.getElementById('compare-head');
    const ivTable = document.getElementById('compare-intervals'), mTable = document.getElementById('compare-metrics');
    const ids = [...new Set(data.pairs.flatMap((p) => [p.a, p.b]))].sort((a, b) => a - b);
    if (!data.pairs.length) {
      head.textContent = data.pairs_note || 'No comparison computed.';
      document.querySelector('#compare .compare-grid').style.display = 'none';
      as.disabled = bs.disabled = true;
      return;
    }
    for (const id of ids) {
      as.append(option(id, tag(byId.get(id)), id === data.pairs[0].a));
      bs.append(option(id, tag(byId.get(id)), id === data.pairs[0].b));
    }
    const chart = new Chart(document.getElementById('compare-chart'), {
      type: 'bar', data: { labels: [], datasets: [] },
      options: {
        indexAxis: 'y',
        plugins: { legend: { position: 'bottom' }, tooltip: { callbacks: { label: compareTooltip } } },
        scales: { x: { title: { display: true, text: 'B − A (ms); left of 0: B is faster' }, grid: { color: (c) => (c.tick && c.tick.value === 0 ? '#344054' : '#e4e7ec'), lineWidth: (c) => (c.tick && c.tick.value === 0 ? 1.5 : 1) } } },
      },
    });
    let shown = [];
    function compareTooltip(it) {
      const iv = shown[it.dataIndex];
      return ['B − A ' + fmt(iv.diff) + ' ms', 'interval ' + fmt(iv.ci_low) + ' … ' + fmt(iv.ci_high) + ' ms', iv.significant ? 'significant: ' + iv.better + ' is faster' : 'not significant'];
    }
    // find returns the pair for (a, b), reading a computed (b, a) pair the
    // other way round: B − A negates and the interval bounds swap.
    function find(a, b) {
      const p = data.pairs.find((q) => q.a === a && q.b === b);
      if (p) return { pair: p, flipped: false };
      const q = data.pairs.find((r) => r.a === b && r.b === a);
      return q ? { pair: q, flipped: true } : null;
    }
    const flipSide = (s) => (s === 'A' ? 'B' : s === 'B' ? 'A' : s);
    function draw() {
      const a = Number(as.value), b = Number(bs.value);
      const got = a === b ? null : find(a, b);
      ivTable.tHead.replaceChildren();
      ivTable.tBodies[0].replaceChildren();
      mTable.tHead.replaceChildren();
      mTable.tBodies[0].replaceChildren();
      if (!got) {
        head.textContent = a === b ? 'Pick two different trials.' : 'This pair was not compared (' + (data.pairs_note || 'choose it with --compare A,B') + ').';
        chart.data.labels = [];
        chart.data.datasets = [];
        chart.update();
        return;
      }
      const { pair, flipped } = got;
      shown = pair.intervals.map((iv) => (flipped ? {
        metric: iv.metric, a: iv.b, b: iv.a, diff: -iv.diff, ci_low: -iv.ci_high, ci_high: -iv.ci_low,
        significant: iv.significant, better: flipSide(iv.better), n_a: iv.n_b, n_b: iv.n_a,
      } : iv));
      const bs_ = data.bootstrap;
      head.replaceChildren('A = ', swatch(a), tag(byId.get(a)), ' (' + (flipped ? pair.n_b : pair.n_a) + ' requests) · B = ', swatch(b),
        tag(byId.get(b)), ' (' + (flipped ? pair.n_a : pair.n_b) + ' requests) · ' + bs_.resamples + ' resamples, ' +
        Math.round(bs_.confidence * 100) + '% percentile-bootstrap intervals, seed ' + bs_.seed +
        (flipped ? ' · computed as A = #' + pair.a + ', B = #' + pair.b + ' and read the other way round' : ''));
      head.dataset.pair = a + ',' + b;
      if (!shown.length) head.append(' · no per-request records on one side: no intervals.');
      const sideColor = (s) => (s === 'A' ? colorOf.get(a) : s === 'B' ? colorOf.get(b) : '#98a2b3');
      chart.data.labels = shown.map((iv) => iv.metric);
      chart.data.datasets = [
        { label: Math.round(bs_.confidence * 100) + '% interval of B − A', data: shown.map((iv) => [iv.ci_low, iv.ci_high]), backgroundColor: shown.map((iv) => sideColor(iv.better) + 'aa'), borderColor: shown.map((iv) => sideColor(iv.better)), borderWidth: 1, borderSkipped: false, barPercentage: 0.45 },
        { type: 'line', label: 'B − A', data: shown.map((iv) => iv.diff), showLine: false, pointStyle: 'rectRot', pointRadius: 6, backgroundColor: '#1f2430', borderColor: '#1f2430' },
      ];
      chart.update();
      ivTable.tHead.append(el('tr', {}, ['metric', 'A', 'B', 'B − A', 'interval', 'verdict'].map((h, i) => el('th', { class: i && i < 5 ? 'num' : null }, h))));
      for (const iv of shown) {
        const verdict = iv.significant ? el('span', { class: 'badge sig' }, (iv.better === 'A' ? 'A' : 'B') + ' faster') : el('span', { class: 'badge nsig' }, 'no significant difference');
        ivTable.tBodies[0].append(el('tr', {}, el('td', {}, iv.metric), el('td', { class: 'num' }, fmt(iv.a)), el('td', { class: 'num' }, fmt(iv.b)),
          el('td', { class: 'num' }, fmt(iv.diff)), el('td', { class: 'num' }, '[' + fmt(iv.ci_low) + ', ' + fmt(iv.ci_high) + ']'), el('td', {}, verdict)));
      }
      mTable.tHead.append(el('tr', {}, ['metric (whole trial)', 'A', 'B', 'B − A', 'better'].map((h, i) => el('th', { class: i && i < 4 ? 'num' : null }, h))));
      for (const d of pair.metrics) {
        const A = flipped ? d.b : d.a, B = flipped ? d.a : d.b, bt = flipped ? flipSide(d.better) : d.better;
        mTable.tBodies[0].append(el('tr', {}, el('td', {}, d.metric), el('td', { class: 'num' }, fmt(A)), el('td', { class: 'num' }, fmt(B)),
          el('td', { class: 'num' }, A === null || B === null ? '–' : fmt(B - A)), el('td', {}, bt ? [el('span', { class: 'swatch', style: 'background:' + sideColor(bt) }), bt] : A === null || B === null ? '–' : 'equal')));
      }
      // Each side's gain over its zero-reuse control: the control, the
      // side, and the side minus its control.
      for (const g of pair.controls || []) {
        const side = flipped ? flipSide(g.side) : g.side;
        mTable.tBodies[0].append(el('tr', { class: 'control-head' }, el('th', { colspan: 5 },
          side + ' over its zero-reuse control (' + g.control.names.join(', ') + '): control, ' + side + ', gain')));
        for (const d of g.metrics) {
          mTable.tBodies[0].append(el('tr', { 'data-control': side }, el('td', {}, d.metric), el('td', { class: 'num' }, fmt(d.a)), el('td', { class: 'num' }, fmt(d.b)),
            el('td', { class: 'num' }, d.diff === null ? '–' : fmt(d.diff)),
            el('td', {}, d.better === 'B' ? side + ' gains' : d.better === 'A' ? 'control better' : d.diff === null ? '–' : 'equal')));
        }
      }
    }
    as.addEventListener('change', draw);
    bs.addEventListener('change', draw);
    draw();
  }

  // ---- identity ---------------------------------------------------------

  // settingsCell shows a row's settings that differ between the report's rows;
  // the ones every row shares are shown once, above the table.
  function settingsCell(settings) {
    const varies = settings.filter((s) => s.varies);
    if (!varies.length) return el('span', { class: 'muted' }, settings.length ? 'as above' : '–');
    return varies.map((s) => el('span', { class: 'chip varies' }, s.key + '=' + s.value));
  }

  function renderIdentity() {
    const common = document.getElementById('identity-common');
    for (const [group, pick] of [['router', (i) => i.router], ['engine', (i) => i.engine], ['workload', (i) => i.workload]]) {
      const same = rows.length ? pick(rows[0].identity).filter((s) => !s.varies) : [];
      if (!same.length) continue;
      common.append(el('div', { class: 'common-group' }, el('span', { class: 'group' }, group),
        same.map((s) => el('span', { class: 'chip' }, s.key + '=' + s.value))));
    }
    const table = document.getElementById('identity-table');
    table.tHead.append(el('tr', {}, ['#', 'trial', 'started (UTC)', 'target', 'hardware', 'topology', 'router', 'engine', 'workload', 'seed', 'hashes'].map((h) => el('th', {}, h))));
    const notRecorded = () => el('span', { class: 'muted' }, 'not recorded');
    for (const r of rows) {
      const id = r.identity;
      table.tBodies[0].append(el('tr', { 'data-id': r.id },
        el('td', {}, swatch(r.id), String(r.id)), el('td', { class: 'name', title: r.name }, shortName(r)),
        el('td', {}, r.started_at.replace('T', ' ').replace('Z', '')), el('td', {}, id.target || notRecorded()),
        el('td', {}, id.hardware || notRecorded()), el('td', {}, id.topology),
        el('td', { class: 'wrap' }, settingsCell(id.router)), el('td', { class: 'wrap' }, settingsCell(id.engine)),
        el('td', { class: 'wrap' }, settingsCell(id.workload)), el('td', { class: 'num' }, String(id.seed)),
        el('td', {}, el('code', { title: 'spec ' + id.spec_hash + '\nengine ' + id.engine_hash + '\nrouter ' + id.router_hash },
          'engine ' + id.engine_hash.slice(0, 8) + (id.router_hash ? ' · router ' + id.router_hash.slice(0, 8) : '')))));
    }
  }

  renderHeader();
  renderSummary();
  renderTable();
  renderPareto();
  renderDistributions();
  renderCurves();
  renderCompare();
  renderIdentity();
  document.body.dataset.rendered = 'true';
})();
