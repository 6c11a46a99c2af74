// fleetd console: plain JS, no framework, nothing from another origin.  The token lives in
// sessionStorage and travels only as an Authorization header.  Views refresh from the SSE
// stream /v1/events (read with fetch, since EventSource cannot send a header) and fall back
// to polling when the stream is down.
'use strict';

const S = { token: null, me: null, clusters: new Map(), view: null, timer: null, es: null,
  live: false, lastEvent: null, refresh: null };

// ---- DOM helpers (text only: never innerHTML with data)
function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  if (tag === 'pre') e.tabIndex = 0;	// scrollable: reachable by keyboard
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}
const $ = (id) => document.getElementById(id);
const badge = (s) => h('span', { class: 'badge s-' + s, 'data-state': s }, s);
const isOperator = () => S.me && (S.me.role === 'operator' || S.me.role === 'admin');
const clusterName = (id) => (id && S.clusters.get(id)) ? S.clusters.get(id).name : (id || '—');

// ---- API
async function api(method, path, body, retried) {
  const opts = { method, headers: { Authorization: 'Bearer ' + S.token } };
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const r = await fetch(path, opts);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (_) { data = null; }
  if (r.status === 401 && !retried && sessionStorage.getItem('fleet.refresh') && await ssoRefresh())
    return api(method, path, body, true);
  if (r.status === 401) { logout('The token was refused.'); throw new Error('unauthorized'); }
  if (!r.ok) {
    const err = new Error((data && (data.detail || data.title)) || ('HTTP ' + r.status));
    err.status = r.status; err.problem = data;
    throw err;
  }
  return data;
}
async function all(path, max) {
  let items = [], next = path;
  while (next && items.length < (max || 1000)) {
    const page = await api('GET', next);
    items = items.concat(page.items || []);
    next = page.next;
  }
  return items;
}
async function loadClusters() {
  const list = await all('/v1/clusters?limit=500');
  S.clusters = new Map(list.map((c) => [c.id, c]));
  return list;
}

// ---- modal confirmation; resolves true on Confirm
function confirmBox(title, body, okText) {
  return new Promise((resolve) => {
    $('modal-title').textContent = title;
    $('modal-body').replaceChildren(body);
    $('modal-ok').textContent = okText || 'Confirm';
    $('modal').hidden = false;
    $('modal-ok').focus();
    const done = (v) => { $('modal').hidden = true; $('modal-ok').onclick = null;
      $('modal-cancel').onclick = null; resolve(v); };
    $('modal-ok').onclick = () => done(true);
    $('modal-cancel').onclick = () => done(false);
  });
}
function flash(msg, isError) {
  const p = h('p', { class: isError ? 'error' : 'hint', role: isError ? 'alert' : 'status' }, msg);
  $('view').prepend(p);
  setTimeout(() => p.remove(), 6000);
}

// ---- SSO: the authorization-code flow with PKCE (RFC 7636) at the OIDC issuer named by
// GET /v1/console/config, as a public client (no secret).  The verifier, state and nonce
// wait in sessionStorage while the browser is at the issuer; the access token is kept as a
// pasted one is, the refresh token (if offered) beside it.
const SSO = { cfg: null, meta: null, timer: null, pending: null };
const b64url = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
  .replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const randomString = () => b64url(crypto.getRandomValues(new Uint8Array(32)));
const redirectUri = () => location.origin + location.pathname;
async function ssoMeta() {
  if (SSO.meta) return SSO.meta;
  const r = await fetch(SSO.cfg.issuer.replace(/\/$/, '') + '/.well-known/openid-configuration');
  if (!r.ok) throw new Error('SSO discovery: HTTP ' + r.status);
  const m = await r.json();
  if (m.issuer !== SSO.cfg.issuer) throw new Error('SSO discovery names another issuer');
  SSO.meta = m;
  return m;
}
async function ssoStart() {
  const m = await ssoMeta();
  const verifier = randomString(), state = randomString(), nonce = randomString();
  const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  sessionStorage.setItem('fleet.sso', JSON.stringify({ verifier, state, nonce, hash: location.hash }));
  const q = new URLSearchParams({ response_type: 'code', client_id: SSO.cfg.client_id,
    redirect_uri: redirectUri(), scope: SSO.cfg.scope, state, nonce,
    code_challenge: challenge, code_challenge_method: 'S256' });
  if (SSO.cfg.resource) q.set('resource', SSO.cfg.resource);
  location.assign(m.authorization_endpoint + '?' + q);
}
async function ssoToken(params) {
  const m = await ssoMeta();
  const body = new URLSearchParams({ client_id: SSO.cfg.client_id, ...params });
  if (SSO.cfg.resource) body.set('resource', SSO.cfg.resource);
  const r = await fetch(m.token_endpoint, { method: 'POST', body });
  const j = await r.json().catch(() => ({}));
  if (!r.ok || !j.access_token) throw new Error('token endpoint: ' + (j.error_description || j.error || 'HTTP ' + r.status));
  return j;
}
function ssoKeep(t) {
  if (t.refresh_token) sessionStorage.setItem('fleet.refresh', t.refresh_token);
  clearTimeout(SSO.timer);
  if (t.expires_in && sessionStorage.getItem('fleet.refresh'))
    SSO.timer = setTimeout(ssoRefresh, Math.max(5, t.expires_in - 30) * 1000);
}
// One refresh at a time: the provider may rotate the refresh token (a second use of the old
// one would fail, and may end the grant).
function ssoRefresh() {
  if (!SSO.pending) SSO.pending = ssoRefreshOnce().finally(() => { SSO.pending = null; });
  return SSO.pending;
}
async function ssoRefreshOnce() {
  const rt = sessionStorage.getItem('fleet.refresh');
  if (!rt || !SSO.cfg) return false;
  try {
    const t = await ssoToken({ grant_type: 'refresh_token', refresh_token: rt });
    S.token = t.access_token;
    sessionStorage.setItem('fleet.token', t.access_token);
    ssoKeep(t);
    return true;
  } catch (e) {
    sessionStorage.removeItem('fleet.refresh');
    return false;
  }
}
function idClaims(jwt) {
  const p = jwt.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
  return JSON.parse(atob(p + '='.repeat((4 - p.length % 4) % 4)));
}
// The issuer sent the browser back with ?code&state (or ?error): check the state, swap the
// code and the verifier for tokens, check the ID token's nonce (it came straight from the
// token endpoint, so its signature needs no check here: OIDC Core 3.1.3.7); the URL loses
// the code at once.
async function ssoCallback(q) {
  const saved = JSON.parse(sessionStorage.getItem('fleet.sso') || 'null');
  sessionStorage.removeItem('fleet.sso');
  history.replaceState(null, '', redirectUri() + ((saved && saved.hash) || ''));
  if (q.get('error')) throw new Error('SSO refused: ' + (q.get('error_description') || q.get('error')));
  if (!saved || q.get('state') !== saved.state) throw new Error('SSO answer with an unknown state');
  const t = await ssoToken({ grant_type: 'authorization_code', code: q.get('code'),
    redirect_uri: redirectUri(), code_verifier: saved.verifier });
  if (t.id_token) {
    const c = idClaims(t.id_token);
    const aud = [].concat(c.aud);
    if (c.nonce !== saved.nonce || c.iss !== SSO.cfg.issuer || !aud.includes(SSO.cfg.client_id))
      throw new Error('SSO answer with a foreign ID token');
  }
  ssoKeep(t);
  return t.access_token;
}
function ssoLogout() {
  const rt = sessionStorage.getItem('fleet.refresh');
  sessionStorage.removeItem('fleet.refresh');
  clearTimeout(SSO.timer);
  if (rt && SSO.meta && SSO.meta.revocation_endpoint)	// best effort: the grant ends at the issuer
    fetch(SSO.meta.revocation_endpoint, { method: 'POST', body: new URLSearchParams({
      client_id: SSO.cfg.client_id, token: rt, token_type_hint: 'refresh_token' }) }).catch(() => {});
}

// ---- login
function logout(msg) {
  ssoLogout();
  sessionStorage.removeItem('fleet.token');
  S.token = null; S.me = null;
  if (S.es) S.es.abort();
  $('nav').hidden = true; $('logout').hidden = true; $('view').hidden = true;
  $('login').hidden = false; $('who').textContent = '';
  $('login-error').textContent = msg || '';
}
async function login(token) {
  S.token = token;
  try {
    S.me = await api('GET', '/v1/whoami');
  } catch (e) {
    logout(e.message === 'unauthorized' ? 'The token was refused.' : e.message);
    return;
  }
  sessionStorage.setItem('fleet.token', token);
  $('login').hidden = true; $('nav').hidden = false; $('logout').hidden = false;
  $('view').hidden = false;
  $('who').textContent = `${S.me.name} · ${S.me.role} · ${S.me.environments.join(', ')}`;
  $('who').setAttribute('data-role', S.me.role);
  startStream();
  if (!location.hash || location.hash === '#') location.hash = '#/fleet';
  else route();
}

// ---- live updates: SSE over fetch, polling while it is down
async function startStream() {
  if (S.es) S.es.abort();
  const ctl = new AbortController();
  S.es = ctl;
  let last = null;
  for (;;) {
    if (!S.token || ctl.signal.aborted) return;
    try {
      const headers = { Authorization: 'Bearer ' + S.token, Accept: 'text/event-stream' };
      if (last) headers['Last-Event-ID'] = last;
      const r = await fetch('/v1/events?follow=true', { headers, signal: ctl.signal });
      if (!r.ok || !r.body) throw new Error('stream ' + r.status);
      setLive(true);
      const rd = r.body.getReader(), dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await rd.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i); buf = buf.slice(i + 2);
          let id = null, data = null, name = 'job';
          for (const line of block.split('\n')) {
            if (line.startsWith('id: ')) id = line.slice(4);
            else if (line.startsWith('event: ')) name = line.slice(7);
            else if (line.startsWith('data: ')) data = line.slice(6);
          }
          if (id) last = id;
          // reset: events were skipped (replay bound): re-read the page whatever it shows
          if (data && name === 'reset') { if (S.refresh) S.refresh.run(); }
          else if (data) onEvent(JSON.parse(data));
        }
      }
    } catch (e) {
      if (ctl.signal.aborted) return;
    }
    setLive(false);
    await new Promise((res) => setTimeout(res, 3000));
  }
}
function setLive(on) {
  S.live = on;
  $('live').textContent = on ? 'live' : 'polling';
  $('live').className = 'live' + (on ? ' on' : '');
  $('live').setAttribute('data-live', on ? 'on' : 'off');
}
let pending = null;
function onEvent(ev) {
  S.lastEvent = ev;
  if (!S.refresh || !S.refresh.wants(ev)) return;
  clearTimeout(pending);
  pending = setTimeout(() => S.refresh && S.refresh.run(), 250);
}
function setRefresh(wants, run, pollMs) {
  S.refresh = { wants, run };
  clearInterval(S.timer);
  // polling: always for operations in progress, else only while the stream is down
  S.timer = setInterval(() => { if (!S.live || pollMs) run(); }, pollMs || 5000);
}

// ---- Costs (issue 27): spend per team per day over the last two weeks, from
// GET /v1/costs?group_by=team (one call per UTC day), and the budgets banner
const TEAM_COLORS = ['#0a58ca', '#116329', '#a40e26', '#7d4e00', '#5a32a3', '#0b7285', '#862e9c', '#495057'];
const DAYS = 14;
const usd = (x) => '$' + Number(x || 0).toFixed(2);

// Budgets at or past their soft threshold (80 % by default) and at 100 %, as one banner
// above every view; refreshed at most every 60 s.
let budgetsAt = 0, budgetsCache = [];
async function budgetBanner() {
  const el = $('budget-banner');
  if (!el) return;
  if (Date.now() - budgetsAt > 60000) {
    try { budgetsCache = await all('/v1/budgets?limit=200'); budgetsAt = Date.now(); } catch (_) { budgetsCache = []; }
  }
  const hot = budgetsCache.filter((b) => Number(b.percent) >= Number(b.soft_percent || 80));
  if (hot.length === 0) { el.hidden = true; el.replaceChildren(); return; }
  const over = hot.filter((b) => Number(b.percent) >= 100);
  el.hidden = false;
  el.className = 'banner ' + (over.length ? 'banner-bad' : 'banner-warn');
  el.dataset.level = over.length ? 'exhausted' : 'soft';
  el.replaceChildren(h('strong', {}, over.length ? 'Budget exhausted: ' : 'Budget warning: '),
    ...hot.map((b, i) => h('span', { 'data-budget': b.name, 'data-percent': String(b.percent) },
      (i ? '; ' : '') + `${b.name} (${b.scope} ${b.team || b.queue || b.environment}) ` +
      `${usd(b.spent_usd)} of ${usd(b.amount_usd)}, ${Number(b.percent).toFixed(0)} %` +
      (b.hard && Number(b.percent) >= 100 ? ', submissions refused' : ''))),
    ' ', h('a', { href: '#/costs' }, 'Costs'));
}

function dayStart(offset) {
  const d = new Date();
  d.setUTCHours(0, 0, 0, 0);
  d.setUTCDate(d.getUTCDate() - offset);
  return d;
}

async function viewCosts(v) {
  const days = [];
  for (let i = DAYS - 1; i >= 0; i--) days.push(dayStart(i));
  const reports = await Promise.all(days.map((d) => {
    const to = new Date(d.getTime() + 86400000);
    return api('GET', `/v1/costs?group_by=team&from=${encodeURIComponent(d.toISOString())}` +
      `&to=${encodeURIComponent(to.toISOString())}`);
  }));
  const teams = [...new Set(reports.flatMap((r) => (r.items || []).map((x) => x.key || '(no team)')))].sort();
  const per = reports.map((r) => {
    const m = new Map();
    for (const x of r.items || []) m.set(x.key || '(no team)', (m.get(x.key || '(no team)') || 0) + Number(x.dollars || 0));
    return m;
  });
  const max = Math.max(1e-9, ...per.map((m) => [...m.values()].reduce((a, b) => a + b, 0)));
  const W = 700, H = 220, pad = 40, bw = (W - pad) / DAYS;
  const NS = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('viewBox', `0 0 ${W} ${H + 30}`);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', `Spend per team per day, last ${DAYS} days (the table below has the figures)`);
  svg.setAttribute('data-testid', 'cost-chart');
  svg.classList.add('chart');
  const add = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, val] of Object.entries(attrs)) e.setAttribute(k, val);
    if (text !== undefined) e.textContent = text;
    svg.append(e);
    return e;
  };
  add('line', { x1: pad, y1: H, x2: W, y2: H, stroke: '#6c757d' });
  add('text', { x: 0, y: 12, 'font-size': 11 }, usd(max));
  per.forEach((m, i) => {
    let y = H;
    teams.forEach((t, k) => {
      const val = m.get(t) || 0;
      if (val <= 0) return;
      const hh = (val / max) * (H - 20);
      y -= hh;
      add('rect', { x: pad + i * bw + 2, y, width: bw - 4, height: hh, fill: TEAM_COLORS[k % TEAM_COLORS.length],
        'data-team': t, 'data-day': days[i].toISOString().slice(0, 10), 'data-dollars': val.toFixed(2) });
    });
    if (i % 2 === 0)
      add('text', { x: pad + i * bw + 2, y: H + 16, 'font-size': 10 }, days[i].toISOString().slice(5, 10));
  });
  const legend = h('ul', { class: 'legend' }, teams.map((t, k) => {
    const sw = h('span', { class: 'swatch' });
    sw.style.background = TEAM_COLORS[k % TEAM_COLORS.length];	// CSSOM: no inline style attribute (CSP)
    return h('li', {}, sw, t);
  }));
  const table = h('table', { 'data-testid': 'cost-table' },
    h('caption', {}, `Spend per team (USD), last ${DAYS} UTC days`),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Day'), teams.map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, per.map((m, i) => h('tr', {}, h('th', { scope: 'row' }, days[i].toISOString().slice(0, 10)),
      teams.map((t) => h('td', { 'data-team': t }, usd(m.get(t) || 0)))))));
  const budgets = budgetsCache.length ? budgetsCache : await all('/v1/budgets?limit=200').catch(() => []);
  const btable = h('table', { 'data-testid': 'budget-table' },
    h('caption', {}, 'Budgets this month'),
    h('thead', {}, h('tr', {}, ['Budget', 'Scope', 'Spent', 'Amount', '%', 'Hard'].map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, budgets.map((b) => h('tr', { 'data-budget': b.name },
      h('td', {}, b.name), h('td', {}, `${b.scope} ${b.team || b.queue || b.environment}`),
      h('td', {}, usd(b.spent_usd)), h('td', {}, usd(b.amount_usd)),
      h('td', { class: Number(b.percent) >= 100 ? 'error' : Number(b.percent) >= Number(b.soft_percent || 80) ? 's-pending' : '' },
        Number(b.percent).toFixed(1)), h('td', {}, b.hard ? 'yes' : 'no')))));
  v.replaceChildren(h('h1', {}, 'Costs'),
    h('section', { class: 'card' }, h('h2', {}, 'Spend per team'), svg, legend, table),
    h('section', { class: 'card' }, h('h2', {}, 'Budgets'), budgets.length ? btable : h('p', { class: 'hint' }, 'No budgets.')));
}

// ---- router
const views = { fleet: viewFleet, queues: viewQueues, jobs: viewJobs, job: viewJob,
  ops: viewOps, op: viewOp, costs: viewCosts };
async function route() {
  if (!S.token) return;
  const parts = location.hash.replace(/^#\/?/, '').split('/');
  let name = parts[0] || 'fleet';
  if (name === 'jobs' && parts[1]) name = 'job';
  if (name === 'ops' && parts[1]) name = 'op';
  for (const a of document.querySelectorAll('#nav a'))
    a.classList.toggle('active', a.dataset.view === parts[0]);
  S.refresh = null; clearInterval(S.timer);
  const v = $('view');
  v.replaceChildren(h('p', { class: 'hint' }, 'Loading…'));
  budgetBanner();
  try {
    await (views[name] || viewFleet)(v, parts.slice(1).map(decodeURIComponent));
  } catch (e) {
    if (e.message !== 'unauthorized')
      v.replaceChildren(h('p', { class: 'error', role: 'alert' }, e.message));
  }
}

// ---- Fleet: regions x providers, clusters and capacity per flavor
async function viewFleet(v) {
  const render = async () => {
    const [clusters, cap] = await Promise.all([loadClusters(), api('GET', '/v1/capacity')]);
    const cells = new Map();
    const key = (env, region, provider) => `${env} / ${provider} / ${region}`;
    for (const c of clusters) {
      const k = key(c.environment, c.region, c.provider);
      if (!cells.has(k)) cells.set(k, { clusters: [], cap: [] });
      cells.get(k).clusters.push(c);
    }
    for (const r of cap.items) {
      const k = key(r.environment, r.region, r.provider);
      if (!cells.has(k)) cells.set(k, { clusters: [], cap: [] });
      cells.get(k).cap.push(r);
    }
    const grid = h('div', { class: 'grid', 'data-testid': 'fleet-grid' });
    for (const k of [...cells.keys()].sort()) {
      const cell = cells.get(k);
      const stale = cell.cap.some((r) => r.stale_clusters > 0);
      grid.append(h('div', { class: 'card cell', 'data-cell': k },
        h('h2', {}, h('span', {}, k), stale ? badge('stale') : null),
        cell.cap.length ? h('table', {},
          h('thead', {}, h('tr', {}, h('th', {}, 'flavor'), h('th', {}, 'free'),
            h('th', {}, 'total'), h('th', { class: 'opt' }, 'growable'))),
          h('tbody', {}, cell.cap.map((r) => h('tr', {},
            h('td', {}, `${r.flavor} (${r.capacity_type})`, r.stale_clusters ? [' ', badge('stale')] : null),
            h('td', { 'data-free': r.flavor }, r.free_now), h('td', {}, r.total),
            h('td', { class: 'opt' }, r.growable))))) : h('p', { class: 'hint' }, 'no capacity observed'),
        cell.clusters.map((c) => h('div', { class: 'cluster row', 'data-cluster': c.name },
          h('strong', {}, c.name), badge(c.state), c.cordoned ? badge('cordoned') : null,
          isOperator() ? h('button', { type: 'button', class: 'secondary', 'data-action': 'drain',
            onclick: () => drainCluster(c) }, 'Drain') : null))));
    }
    v.replaceChildren(h('h1', {}, 'Fleet'),
      h('p', { class: 'hint' }, 'Accelerators free now / total / growable per environment, provider and region. Stale snapshots and cordoned or unreachable clusters are marked.'),
      grid);
  };
  await render();
  setRefresh(() => false, render, 15000);
}
async function drainCluster(c) {
  const body = h('div', {}, h('p', {}, `Drain ${c.name} (${c.region}, ${c.provider})?`),
    h('p', {}, 'It is cordoned and every job on it moves to another cluster of its environment.'));
  if (!await confirmBox('Drain cluster', body, 'Drain')) return;
  try {
    const op = await api('POST', `/v1/clusters/${c.id}/drain`);
    rememberOp(op, `drain ${c.name}`);
    location.hash = '#/ops/' + op.id;
  } catch (e) { flash(e.message, true); }
}

// ---- Queues: quota, live usage, borrowed and lent, fair-share position, pending by reason
// (GET /v1/queues/{id}/status: the scheduler's model of the environment, computed now)
async function viewQueues(v) {
  const render = async () => {
    const [queues, jobs] = await Promise.all([all('/v1/queues?limit=500'),
      all('/v1/jobs?limit=500', 2000)]);
    const stats = await Promise.all(queues.map((q) => api('GET', `/v1/queues/${q.id}/status`).catch(() => null)));
    const counts = {};
    for (const j of jobs) {
      const k = j.queue_id; counts[k] = counts[k] || {};
      counts[k][j.state] = (counts[k][j.state] || 0) + 1;
    }
    const fmtQ = (q) => q && Object.keys(q).length ? Object.entries(q).map(([f, n]) => `${f}: ${n}`).join(', ') : '—';
    const usage = (st) => st && st.flavors.length ? h('ul', { class: 'plain' }, st.flavors.map((f) =>
      h('li', { 'data-flavor': f.flavor }, `${f.flavor}: ${f.usage} / ${f.nominal}`,
        f.borrowed ? h('span', { class: 'hint' }, ` +${f.borrowed} borrowed`) : null,
        f.lent ? h('span', { class: 'hint' }, ` ${f.lent} lent`) : null))) : '—';
    const share = (st) => !st ? '—' : `${st.fair_share.share === null ? '∞' : st.fair_share.share.toFixed(2)}`
      + ` · #${st.fair_share.rank} of ${st.fair_share.cohort_queues}`;
    const pending = (st, q) => {
      const n = st ? st.pending.total : (counts[q.id] || {}).pending || 0;
      const why = st ? Object.entries(st.pending.by_reason).map(([r, c]) => `${r}: ${c}`).join(', ') : '';
      return h('td', { 'data-field': 'pending' }, String(n), why ? h('div', { class: 'hint' }, why) : null);
    };
    v.replaceChildren(h('h1', {}, 'Queues'), h('div', { class: 'card' }, h('table', {},
      h('thead', {}, h('tr', {}, ['queue', 'environment', 'cohort', 'weight', 'usage / quota',
        'fair share', 'borrowing limit', 'lending limit', 'pending', 'running'].map((t, i) =>
        h('th', { scope: 'col', class: i === 2 || i === 3 || i === 6 || i === 7 ? 'opt' : null }, t)))),
      h('tbody', {}, queues.map((q, i) => h('tr', { 'data-queue': q.name },
        h('td', {}, q.name), h('td', {}, q.environment), h('td', { class: 'opt' }, q.cohort || '—'),
        h('td', { class: 'opt' }, String(q.weight)), h('td', { 'data-field': 'usage' }, usage(stats[i])),
        h('td', { 'data-field': 'share' }, share(stats[i])),
        h('td', { class: 'opt' }, fmtQ(q.borrowing_limit)), h('td', { class: 'opt' }, fmtQ(q.lending_limit)),
        pending(stats[i], q),
        h('td', {}, String((counts[q.id] || {}).running || 0))))))));
  };
  await render();
  setRefresh(() => true, render);
}

// ---- Jobs: filterable, paged list and a submit form
const SAMPLE = (env, queue) => JSON.stringify({ environment: env, queue: queue || 'research',
  kind: 'RayJob', name: 'console-' + Date.now().toString(36), ray_version: '2.52.0', entrypoint: 'python train.py',
  head: { cpu: '1', memory: '2Gi' }, worker_groups: [{ name: 'gpu', replicas: 1, cpu: '4',
    memory: '16Gi', accelerator: { flavor: 'nvidia-l4', count: 1 } }] }, null, 2);
async function viewJobs(v) {
  const f = JSON.parse(sessionStorage.getItem('fleet.jobfilter') || '{}');
  let cursor = null, pages = [];
  const table = h('tbody', { 'data-testid': 'jobs' });
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Next page');
  const fields = ['state', 'queue', 'environment', 'region', 'cluster'].map((k) =>
    h('div', {}, h('label', { for: 'f-' + k }, k),
      h('input', { id: 'f-' + k, name: k, value: f[k] || '', size: 12 })));
  const load = async (after) => {
    const q = new URLSearchParams({ limit: '25' });
    for (const k of Object.keys(f)) if (f[k]) q.set(k, f[k]);
    if (after) q.set('after', after);
    const page = await api('GET', '/v1/jobs?' + q);
    cursor = page.next ? new URL(page.next, location.href).searchParams.get('after') : null;
    more.hidden = !cursor;
    return page.items;
  };
  const row = (j) => h('tr', { 'data-job': j.id },
    h('td', {}, h('a', { href: '#/jobs/' + j.id }, j.name)), h('td', {}, badge(j.state)),
    h('td', {}, j.queue), h('td', { class: 'opt' }, j.environment),
    h('td', { class: 'opt' }, j.region || '—'), h('td', {}, j.cluster || '—'),
    h('td', { class: 'opt' }, new Date(j.created_at).toLocaleString()));
  const render = async () => {
    const items = await load(null);
    pages = [items];
    table.replaceChildren(...items.map(row));
  };
  more.onclick = async () => { const items = await load(cursor); pages.push(items);
    table.append(...items.map(row)); };
  const form = h('form', { class: 'filters', onsubmit: async (e) => {
    e.preventDefault();
    for (const el of fields) { const i = el.querySelector('input'); f[i.name] = i.value.trim(); }
    sessionStorage.setItem('fleet.jobfilter', JSON.stringify(f));
    await render();
  } }, fields, h('button', { type: 'submit' }, 'Filter'));
  const parts = [h('h1', {}, 'Jobs'), h('div', { class: 'card' }, form),
    h('div', { class: 'card' }, h('table', {}, h('thead', {}, h('tr', {},
      ['job', 'state', 'queue', 'environment', 'region', 'cluster', 'submitted'].map((t, i) =>
        h('th', { class: [3, 4, 6].includes(i) ? 'opt' : null }, t)))), table), more)];
  if (isOperator()) {
    const envs = S.me.environments.includes('*') ? [] : S.me.environments;
    const spec = h('textarea', { id: 'spec', name: 'spec', 'aria-label': 'job spec (JSON)' },
      SAMPLE(envs[0] || (await firstEnv()), 'research'));
    parts.push(h('div', { class: 'card' }, h('h2', {}, 'Submit a job'),
      h('form', { onsubmit: async (e) => {
        e.preventDefault();
        try {
          const job = await api('POST', '/v1/jobs', JSON.parse(spec.value));
          location.hash = '#/jobs/' + job.id;
        } catch (err) { flash(err.message, true); }
      } }, h('label', { for: 'spec' }, 'Spec (JSON)'), spec,
        h('button', { type: 'submit', 'data-action': 'submit' }, 'Submit'))));
  }
  v.replaceChildren(...parts);
  await render();
  setRefresh(() => true, render);
}
async function firstEnv() {
  const envs = await api('GET', '/v1/environments');
  return envs.items.length ? envs.items[0].name : 'dev';
}

// ---- one job: state, timeline, explain with names, placement, manifest, cancel / move
async function viewJob(v, [id]) {
  if (!S.clusters.size) await loadClusters();
  const render = async () => {
    const [job, events, explain] = await Promise.all([api('GET', '/v1/jobs/' + id),
      all(`/v1/jobs/${id}/events?limit=500`), api('GET', `/v1/jobs/${id}/placement`)]);
    let manifest = null, postmortem = null;
    try { manifest = await api('GET', `/v1/jobs/${id}/manifest`); } catch (_) { manifest = null; }
    if (explain.postmortem) {
      try { postmortem = await api('GET', `/v1/jobs/${id}/postmortem`); } catch (_) { postmortem = null; }
    }
    const done = ['succeeded', 'failed', 'cancelled'].includes(job.state);
    const actions = isOperator() && !done ? h('div', { class: 'row' },
      h('button', { type: 'button', class: 'danger', 'data-action': 'cancel',
        onclick: () => cancelJob(job) }, 'Cancel'),
      h('input', { id: 'move-target', 'aria-label': 'target region', placeholder: 'region', size: 14 }),
      h('button', { type: 'button', class: 'secondary', 'data-action': 'move',
        onclick: () => moveJob(job, $('move-target').value.trim()) }, 'Move…')) : null;
    const verdicts = explain.clusters || explain.candidates ||
      (explain.decision && explain.decision.candidates) || [];
    v.replaceChildren(...[
      h('h1', {}, job.name, ' ', badge(job.state)),
      h('div', { class: 'card' }, h('table', {}, h('tbody', {},
        [['id', job.id], ['environment', job.environment], ['queue', job.queue],
          ['priority', `${job.priority_class} (${job.priority})`], ['attempt', job.attempt],
          ['cluster', job.cluster ? `${job.cluster} (${job.cluster_id})` : '—'],
          ['region', job.region || '—'], ['reason', job.reason || '—']].map(([k, val]) =>
          h('tr', {}, h('th', {}, k), h('td', { 'data-field': k }, val))))), actions),
      whyCard(explain, postmortem),
      h('div', { class: 'card', 'data-testid': 'explain' }, h('h2', {}, 'Explain'),
        h('p', {}, explain.state === 'pending'
          ? `Pending at position ${explain.position ?? '—'}` + (explain.hold_cluster ? `, holding ${clusterName(explain.hold_cluster)}` : '')
          : `Placed (${explain.state})` + (explain.decision && explain.decision.cluster ? ` on ${clusterName(explain.decision.cluster)}` : '')),
        verdicts.length ? h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'cluster'),
          h('th', {}, 'region'), h('th', {}, 'reason'), h('th', { class: 'opt' }, 'score'))),
        h('tbody', {}, verdicts.map((c) => h('tr', { 'data-verdict': clusterName(c.cluster) },
          h('td', {}, clusterName(c.cluster)), h('td', {}, c.region || '—'),
          h('td', {}, badge(c.reason), c.detail ? ' ' + c.detail : ''),
          h('td', { class: 'opt' }, typeof c.score === 'number' ? c.score.toFixed(3) : '—'))))) : h('p', { class: 'hint' }, 'no candidates recorded')),
      h('div', { class: 'card' }, h('h2', {}, 'Timeline'), h('ol', { class: 'timeline', 'data-testid': 'timeline' },
        events.map((e) => h('li', {}, h('time', {}, new Date(e.at).toLocaleTimeString()), ' ',
          e.to_state ? [badge(e.to_state), ' '] : null, e.type, e.message ? ': ' + e.message : '')))),
      h('div', { class: 'card' }, h('h2', {}, 'Placement'),
        h('pre', {}, job.placement ? JSON.stringify(job.placement, null, 2) : 'not placed yet')),
      h('div', { class: 'card' }, h('h2', {}, 'Manifest as applied'),
        h('pre', { 'data-testid': 'manifest' }, manifest ? JSON.stringify(manifest, null, 2) : 'not applied yet'))
    ].filter((x) => x));	// whyCard: null when there is nothing to say
  };
  await render();
  setRefresh((ev) => ev.job_id === id, render);
}
// "Why failed / why stalled" in one place (issue 24): what explain says first (a lost node
// waiting for a spare, the failure that ended the job or its last attempt, the signals of the
// current attempt) and the post-mortems kept of its ended attempts.  Null when there is nothing.
function whyCard(x, pm) {
  const f = x.failure || x.last_failure;
  const w = x.waiting_for_spare;
  const sig = x.signals || [];
  const items = (pm && pm.items) || [];
  if (!f && !w && !sig.length && !items.length) return null;
  const list = (a) => (a && a.length ? a.join(', ') : '—');
  const failure = f ? h('div', { 'data-testid': 'why-failure' },
    h('p', {}, h('strong', {}, x.failure ? 'Failed: ' : 'Last failure (retried or moved on): '),
      badge(f.class), ' ', f.reason, f.attempt ? ` (attempt ${f.attempt})` : ''),
    h('p', {}, f.message || f.summary || ''),
    h('table', {}, h('tbody', {}, [['pods', list(f.pods)], ['ranks', list(f.ranks)],
      ['nodes', list(f.nodes)], ['evidence', f.evidence ? JSON.stringify(f.evidence) : '—'],
      ['retry', f.retry ? (f.retry.given ? 'a new attempt was given' : 'not retried') +
        (f.retry.why ? ': ' + f.retry.why : '') : '—']].map(([k, v]) =>
      h('tr', {}, h('th', {}, k), h('td', { 'data-field': 'failure-' + k }, v)))))) : null;
  const waiting = w ? h('p', { 'data-testid': 'why-waiting' }, h('strong', {}, 'Waiting for a spare'),
    ` in ${w.domain || '—'}: node ${w.lost_node || '—'} lost (${w.why || '—'}). ${w.reason || ''}`) : null;
  const signals = sig.length ? h('div', {}, h('h3', {}, 'Signals of this attempt'),
    h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'class'), h('th', {}, 'reason'),
      h('th', {}, 'nodes'), h('th', {}, 'message'))),
    h('tbody', {}, sig.map((g) => h('tr', {}, h('td', {}, badge(g.class)), h('td', {}, g.reason),
      h('td', {}, list(g.nodes)), h('td', {}, g.message)))))) : null;
  const kept = items.length ? h('div', { 'data-testid': 'postmortem' }, h('h3', {}, 'Post-mortem'),
    items.map((it) => {
      const r = it.record || {};
      return h('div', { class: 'cluster' },
        h('p', {}, `attempt ${it.attempt} on ${it.cluster || '—'}: ${it.trigger} at ${it.recorded_at}`),
        r.ray ? h('p', { class: 'hint' }, `ray: ${r.ray.status || '—'} ${r.ray.message || ''}`) : null,
        h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'pod'), h('th', {}, 'node'),
          h('th', {}, 'phase'), h('th', {}, 'containers'))),
        h('tbody', {}, (r.pods || []).map((p) => h('tr', {}, h('td', {}, `${p.name} (${p.type || '—'})`),
          h('td', {}, p.node || '—'), h('td', {}, `${p.phase || '—'}, ${p.restarts || 0} restarts`),
          h('td', {}, (p.containers || []).map((c) => {
            const st = c.state || {}, ls = c.last_state;
            return `${c.name}: ${st.state || '—'} ${st.reason || ''}` +
              (st.exit_code != null ? ` exit ${st.exit_code}` : '') +
              (ls ? `, last ${ls.state || '—'} ${ls.reason || '—'} exit ${ls.exit_code ?? '—'}` : '');
          }).join('; ')))))),
        (r.events || []).length ? h('ul', { class: 'plain hint' }, r.events.map((ev) =>
          h('li', {}, `${ev.object || ''} ${ev.reason || ''}: ${ev.message || ''}`))) : null);
    })) : null;
  return h('div', { class: 'card', 'data-testid': 'why' },
    h('h2', {}, x.failure ? 'Why it failed' : 'Why it stalls or failed'),
    waiting, failure, signals, kept);
}
async function cancelJob(job) {
  if (!await confirmBox('Cancel job', h('p', {}, `Cancel ${job.name} (${job.state})? Its Ray object is deleted from the cluster.`), 'Cancel job')) return;
  try { await api('POST', `/v1/jobs/${job.id}/cancel`); route(); } catch (e) { flash(e.message, true); }
}
async function moveJob(job, region) {
  if (!region) { flash('Name a target region first.', true); return; }
  let plan;
  try {
    plan = await api('POST', `/v1/jobs/${job.id}/move`, { target: { region }, dry_run: true });
  } catch (e) { flash(e.message, true); return; }
  const body = h('div', {}, h('p', {}, `Move ${job.name} to ${region}? The dry run plans:`),
    h('pre', { 'data-testid': 'plan' }, JSON.stringify(plan, null, 2)));
  if (!await confirmBox('Move job', body, 'Move')) return;
  try {
    const op = await api('POST', `/v1/jobs/${job.id}/move`, { target: { region } });
    if (op && op.id && op.kind) { rememberOp(op, `move ${job.name}`); location.hash = '#/ops/' + op.id; } else route();
  } catch (e) { flash(e.message, true); }
}

// ---- Operations: every operation of the token's environments (GET /v1/operations), live progress, cancel
function rememberOp(op, label) {
  const ops = JSON.parse(sessionStorage.getItem('fleet.ops') || '[]');
  ops.unshift({ id: op.id, label });
  sessionStorage.setItem('fleet.ops', JSON.stringify(ops.slice(0, 50)));
}
async function viewOps(v) {
  const input = h('input', { id: 'op-id', 'aria-label': 'operation id', size: 38 });
  const state = h('select', { 'aria-label': 'state filter' },
    ['', 'running', 'succeeded', 'failed', 'cancelled'].map((s) => h('option', { value: s }, s || 'any state')));
  const list = h('div', { class: 'card' });
  const render = async () => {
    const ops = await all('/v1/operations?limit=100' + (state.value ? '&state=' + state.value : ''), 500);
    const mine = new Map(JSON.parse(sessionStorage.getItem('fleet.ops') || '[]').map((o) => [o.id, o.label]));
    list.replaceChildren(ops.length ? h('table', {},
      h('thead', {}, h('tr', {}, ['Operation', 'Environment', 'Target', 'State', 'Moved', 'Waiting', 'Failed', 'Total', 'Started']
        .map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, ops.map((o) => h('tr', { 'data-op': o.id },
        h('td', {}, h('a', { href: '#/ops/' + o.id }, mine.get(o.id) || `${o.kind} ${o.id.slice(0, 8)}`)),
        h('td', {}, o.environment),
        h('td', {}, o.cluster_name || (o.target.region ? `region ${o.target.region}` : o.target.cluster_id || '')),
        h('td', {}, badge(o.state)), h('td', {}, String(o.moved)), h('td', {}, String(o.waiting)),
        h('td', {}, String(o.failed)), h('td', {}, String(o.total)),
        h('td', { class: 'opt' }, new Date(o.created_at).toLocaleString())))))
      : h('p', { class: 'hint' }, 'No operation' + (state.value ? ' in state ' + state.value : '') + '.'));
  };
  state.addEventListener('change', () => render().catch((e) => flash(e.message, true)));
  v.replaceChildren(h('h1', {}, 'Operations'),
    h('div', { class: 'card' }, h('form', { class: 'row', onsubmit: (e) => { e.preventDefault();
      location.hash = '#/ops/' + input.value.trim(); } }, input, h('button', { type: 'submit' }, 'Open'), state)),
    list);
  await render();
  setRefresh(() => true, render, 0);
}
async function viewOp(v, [id]) {
  if (!S.clusters.size) await loadClusters();
  const render = async () => {
    const op = await api('GET', '/v1/operations/' + id);
    const pct = op.total ? Math.round(100 * (op.moved + op.failed) / op.total) : (op.state === 'running' ? 0 : 100);
    const target = op.target.cluster_id ? clusterName(op.target.cluster_id) : `${op.target.environment} / ${op.target.region}`;
    v.replaceChildren(...[h('h1', {}, `${op.kind} ${target} `, badge(op.state)),
      h('div', { class: 'card' },
        h('div', { class: 'bar', role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': 100,
          'aria-valuenow': pct, 'aria-label': 'progress' }, h('span', { style: null, 'data-pct': pct })),
        h('p', { 'data-testid': 'progress' }, `${pct} % — ${op.moved} moved, ${op.waiting} waiting, ${op.failed} failed of ${op.total}`),
        isOperator() && op.state === 'running' ? h('button', { type: 'button', class: 'danger',
          'data-action': 'cancel-op', onclick: () => cancelOp(op) }, 'Cancel operation') : null),
      op.failures.length ? h('div', { class: 'card' }, h('h2', {}, 'Failures'),
        h('pre', {}, JSON.stringify(op.failures, null, 2))) : null,
      op.jobs ? h('div', { class: 'card' }, h('h2', {}, 'Jobs'), h('table', {}, h('tbody', {},
        op.jobs.map((j) => h('tr', {}, h('td', {}, h('a', { href: '#/jobs/' + (j.id || j.job_id) }, j.name || j.id || j.job_id)),
          h('td', {}, badge(j.state || '—')), h('td', {}, j.reason || j.waiting_for || '')))))) : null]
      .filter(Boolean));
    const bar = v.querySelector('.bar > span');
    if (bar) bar.style.width = pct + '%';	// CSSOM, allowed by style-src 'self'
    return op;
  };
  const op = await render();
  setRefresh(() => true, render, op.state === 'running' ? 2000 : 0);
}
async function cancelOp(op) {
  if (!await confirmBox('Cancel operation', h('p', {}, 'Jobs not moved yet stay where they are.'), 'Cancel operation')) return;
  try { await api('POST', `/v1/operations/${op.id}/cancel`); route(); } catch (e) { flash(e.message, true); }
}

// ---- start
window.addEventListener('hashchange', route);
document.addEventListener('DOMContentLoaded', () => {
  $('login-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const t = $('token').value.trim();
    $('token').value = '';
    login(t);
  });
  $('logout').addEventListener('click', () => logout(''));
  $('sso-login').addEventListener('click', () => ssoStart().catch((e) => logout(e.message)));
  start();
});
async function start() {
  try {
    const c = await (await fetch('/v1/console/config')).json();
    SSO.cfg = c.oidc || null;
  } catch (_) { SSO.cfg = null; }
  $('sso').hidden = !SSO.cfg;
  const q = new URLSearchParams(location.search);
  if (SSO.cfg && q.has('state') && (q.has('code') || q.has('error'))) {
    let t;
    try { t = await ssoCallback(q); } catch (e) { logout(e.message); return; }
    login(t);
    return;
  }
  const saved = sessionStorage.getItem('fleet.token');
  if (saved) {
    if (SSO.cfg && sessionStorage.getItem('fleet.refresh')) ssoKeep({ expires_in: 60 });
    login(saved);
  }
}
