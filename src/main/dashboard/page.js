// The agentd dashboard: reads /events (a snapshot a second, server-sent
// events) and draws it. No build step: plain browser JavaScript and uPlot.
// Every value is written with textContent, never as HTML.
'use strict';
(function () {
  const $ = (id) => document.getElementById(id);
  let chart = null;
  let received = 0;

  function ms(v) {
    if (v === 0) return '–';
    if (v < 1) return `${v.toFixed(2)} ms`;
    if (v < 1000) return `${v.toFixed(v < 10 ? 1 : 0)} ms`;
    return `${(v / 1000).toFixed(1)} s`;
  }
  function duration(s) {
    if (s < 60) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min`;
    if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
    return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
  }
  function bytes(n) {
    if (n < 1024) return `${n} B`;
    if (n < 1048576) return `${(n / 1024).toFixed(1)} KiB`;
    return `${(n / 1048576).toFixed(1)} MiB`;
  }

  /** Replaces a table's rows: each row is a list of cells, a cell a string or {text, cls}. */
  function rows(id, list, key, empty) {
    const body = $(id).tBodies[0];
    body.replaceChildren();
    if (list.length === 0) {
      const td = document.createElement('td');
      td.colSpan = $(id).tHead.rows[0].cells.length;
      td.className = 'empty';
      td.textContent = empty;
      body.insertRow().appendChild(td);
      return;
    }
    for (const item of list) {
      const tr = body.insertRow();
      if (key) tr.dataset.key = key(item);
      for (const cell of item.cells) {
        const td = tr.insertCell();
        const c = typeof cell === 'object' ? cell : { text: String(cell) };
        td.textContent = c.text;
        if (c.cls) td.className = c.cls;
      }
    }
  }

  function drawChart(series) {
    const data = [series.map((s) => s.t), series.map((s) => s.turns), series.map((s) => (s.turns ? s.p50_ms : null)), series.map((s) => (s.turns ? s.p99_ms : null))];
    if (chart === null) {
      const el = $('chart');
      chart = new uPlot({
        width: Math.max(320, el.clientWidth - 8),
        height: 240,
        series: [
          {},
          { label: 'turns/s', stroke: '#1f77b4', fill: 'rgba(31,119,180,0.12)', scale: 'turns', value: (u, v) => (v == null ? '–' : String(v)) },
          { label: 'p50', stroke: '#2ca02c', scale: 'ms', spanGaps: true, points: { show: true, size: 5 }, value: (u, v) => (v == null ? '–' : ms(v)) },
          { label: 'p99', stroke: '#d62728', scale: 'ms', spanGaps: true, points: { show: true, size: 5 }, value: (u, v) => (v == null ? '–' : ms(v)) },
        ],
        scales: { turns: { range: (u, min, max) => [0, Math.max(1, max)] }, ms: { distr: 3 } },
        axes: [{}, { scale: 'turns', label: 'turns/s' }, { scale: 'ms', side: 1, label: 'latency ms', grid: { show: false } }],
      }, data, el);
      window.addEventListener('resize', () => chart.setSize({ width: Math.max(320, el.clientWidth - 8), height: 240 }));
    } else {
      chart.setData(data);
    }
    $('chart').dataset.points = String(series.filter((s) => s.turns > 0).length);
  }

  function render(d) {
    $('version').textContent = d.version;
    $('node').textContent = d.cluster ? `node ${d.cluster.node}` : `${d.workers} shards`;
    $('turns-per-sec').textContent = d.turns_per_sec.toFixed(1);
    $('p50').textContent = ms(d.p50_ms);
    $('p99').textContent = ms(d.p99_ms);
    $('turns-total').textContent = String(d.turns_total);
    $('errors-total').textContent = String(d.errors_total);
    $('errors-total').className = d.errors_total > 0 ? 'bad' : '';
    $('in-memory').textContent = String(d.conversations_in_memory);
    $('connections').textContent = String(d.connections);
    $('uptime').textContent = duration(d.uptime_secs);
    drawChart(d.series);
    rows('shards', d.shards.map((s) => ({ cells: [s.shard, s.running, s.queued] })), (s) => String(s.cells[0]), 'no shards');
    rows('agents', d.agents.map((a) => ({ name: a.name, cells: [a.name, a.model, { text: String(a.turns), cls: 'turns' }, { text: String(a.errors), cls: a.errors > 0 ? 'bad' : '' }, a.mcps] })), (a) => a.name, 'no agents');
    rows('conversations', d.conversations.map((c) => ({ cells: [c.agent, c.sender, c.running ? { text: 'running', cls: 'good' } : 'idle', c.queued, c.message_count, bytes(c.memory_bytes), { text: c.title, cls: 'title' }] })), null, 'no conversation in memory');
    rows('errors', d.errors.map((e) => ({ cells: [new Date(e.time).toLocaleTimeString(), e.agent, e.sender, { text: e.code, cls: 'bad' }, { text: e.message, cls: 'msg' }] })), null, 'no failed turn, no warning');
    rows('mcps', d.mcps.map((m) => ({ cells: [m.agent, m.name, m.transport, { text: m.status, cls: m.status === 'connected' ? 'good' : m.status === 'failed' ? 'bad' : '' }, m.tool_count, { text: m.error, cls: 'msg' }] })), null, 'no MCP server');
    const c = d.cluster;
    $('cluster-section').hidden = c === null;
    if (c !== null) {
      $('cluster-name').textContent = c.name;
      $('cluster-summary').textContent = `${c.live_nodes.length} live of ${c.nodes.length} nodes, ${c.partitions} partitions (${c.unowned_partitions} unowned), ${c.served_partitions} served here, lease ${c.lease_ms} ms`;
      rows('nodes', c.nodes.map((n) => ({ cells: [n.node === c.node ? `${n.node} (this)` : n.node, { text: n.live ? 'yes' : 'no', cls: n.live ? 'good' : 'bad' }, n.partitions, `${n.lease_age_ms} ms`] })), null, 'no nodes');
    }
    received++;
    document.body.dataset.snapshots = String(received);
    document.body.dataset.turns = String(d.turns_total);
  }

  const events = new EventSource('events');
  events.addEventListener('snapshot', (e) => {
    $('live').textContent = 'live';
    $('live').className = 'state live';
    render(JSON.parse(e.data));
  });
  events.addEventListener('error', () => {
    $('live').textContent = 'disconnected: retrying';
    $('live').className = 'state down';
  });
})();
