// The Palisade status page. Plain browser JavaScript, no build step: the node serves this
// file as it is. Everything comes from the node that served the page:
//   /api/events   server-sent events: `cluster` (every node's status, as this node
//                 gathered it), `events` (recent events), `locks` (the tables changed)
//   /api/locks    one page of the lock table (?prefix=&offset=&limit=)
//   /api/elections one page of elections
//   /api/sessions one page of sessions; POST /api/sessions/revoke revokes one (admin token)
// Text from the cluster (lock names, election values) is only ever set as textContent.

const PAGE_SIZE = 50;
const EVENTS_SHOWN = 200;
/** Refetch the tables at most this often, however fast they change. */
const TABLE_REFRESH_MS = 300;

const $ = (sel) => document.querySelector(sel);

const state = {
  cluster: null,
  leader: undefined, // undefined until the first cluster view; then a node id or null
  lastLeader: null, // the last leader seen, kept through a leaderless gap
  noLeaderSince: null, // Date.now() when this page last saw the cluster without a leader
  prefix: '',
  sessionPrefix: '',
  offset: 0,
  total: 0,
  events: [],
  lastSeq: 0,
  tablesInFlight: false,
  tablesAgain: false,
  lastTablesAt: 0,
};

// ---- small DOM helpers -----------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('data-')) e.setAttribute(k, String(v));
    else if (k === 'title') e.title = v;
    else e.setAttribute(k, String(v));
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c === null || c === undefined ? '' : String(c)));
  return e;
}

function td(text, cls) {
  return el('td', cls ? { class: cls } : {}, text);
}

function fmtTime(ms) {
  const d = new Date(ms);
  const p = (n, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

function fmtMs(ms) {
  if (ms === null || ms === undefined) return '—';
  return ms < 10 ? `${ms.toFixed(1)} ms` : `${Math.round(ms)} ms`;
}

function fmtSeconds(ms) {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

/** The leader knows the time left and how long a holder has held; other nodes show the TTL. */
function fmtHold(h) {
  const ttl = h.ttlMs === null || h.ttlMs === undefined ? '—' : `ttl ${fmtSeconds(h.ttlMs)}`;
  const left = h.ttlLeftMs === null || h.ttlLeftMs === undefined ? '' : `, ${fmtSeconds(h.ttlLeftMs)} left`;
  const held = h.heldForMs === null || h.heldForMs === undefined ? '' : `held ${fmtSeconds(h.heldForMs)}, `;
  return `${held}${ttl}${left}`;
}

// ---- nodes ----------------------------------------------------------------------------

/** What failure the cluster can still take (the words of `palisade status`, src/cli/quorum.ts). */
function faultTolerance(up, total, hasLeader) {
  const quorum = Math.floor(total / 2) + 1;
  const spare = up - quorum;
  if (spare < 0) return { danger: 'down', text: `${up} of ${total} up: no quorum (${quorum} needed), no leader can be elected and writes stop` };
  if (!hasLeader) return { danger: 'down', text: `${up} of ${total} up, no leader at the moment: writes wait for an election` };
  if (spare === 0) return { danger: 'degraded', text: up === total ? `${up} of ${total} up: survives no failure` : `${up} of ${total} up: one more failure stops writes` };
  return { danger: up === total ? 'ok' : 'degraded', text: `${up} of ${total} up: survives ${spare} failure${spare === 1 ? '' : 's'}` };
}

/** The health line, shown from the first view (a page opened after a failure says so too). */
function renderHealth(c) {
  const up = c.nodes.filter((n) => n.status).length;
  const ft = faultTolerance(up, c.nodes.length, c.leader !== null);
  const h = $('#health');
  h.hidden = false;
  h.dataset.danger = ft.danger;
  h.textContent = ft.text;
  // The connection badge says the page is live; it is not green while the cluster has no leader.
  const conn = $('#conn');
  if (conn.dataset.state === 'live' || conn.dataset.state === 'noleader') {
    if (c.leader === null) setConn('noleader', 'live · no leader');
    else setConn('live', 'live');
  }
}

function renderCluster(c) {
  state.cluster = c;
  renderHealth(c);
  $('#cluster-id').textContent = c.clusterId;
  $('#served-by').textContent = c.self;
  $('#leader').textContent = c.leader ?? 'none';
  $('#term').textContent = String(c.term);
  noteLeader(c);

  const leaderStatus = c.nodes.find((n) => n.id === c.leader)?.status ?? null;
  const progressOf = (id) => leaderStatus?.peers.find((p) => p.id === id) ?? null;
  const body = $('#nodes tbody');
  body.replaceChildren(
    ...c.nodes.map((n) => {
      const s = n.status;
      const isLeader = n.id === c.leader;
      const role = s ? s.role : 'unreachable';
      const p = progressOf(n.id);
      const tr = el('tr', { 'data-node': n.id, 'data-role': role, class: `${isLeader ? 'leader' : ''} ${s ? '' : 'down'}`.trim() });
      tr.append(
        el('td', {}, el('span', { class: 'node-id' }, n.id), n.self ? el('span', { class: 'tag' }, 'this page') : ''),
        el('td', {}, el('span', { class: `role role-${role}`, 'data-testid': 'role' }, role)),
      );
      if (!s) {
        tr.append(el('td', { colspan: 10, class: 'error' }, n.error ?? 'unreachable'));
        return tr;
      }
      tr.append(
        td(s.term, 'num'),
        td(s.leader ?? '—'),
        td(s.commitIndex, 'num'),
        td(s.appliedIndex, 'num'),
        td(s.applyLag, `num ${s.applyLag > 0 ? 'warn' : ''}`),
        td(isLeader ? '—' : p ? p.lag : '?', `num ${p && p.lag > 0 ? 'warn' : ''}`),
        td(isLeader ? '—' : fmtMs(p?.rttMs), 'num'),
        td(s.sessions, 'num'),
        td(s.clientConnections, 'num'),
        // Warnings (a member not catching up, a refused peer, a moved address) keep a node
        // ready but need an operator: shown in the same cell.
        td([s.ready ? 'ready' : `no: ${s.notReadyReason}`, ...(s.warnings ?? [])].join('; '), s.ready && !(s.warnings ?? []).length ? 'ok' : 'warn'),
      );
      return tr;
    }),
  );
}

/** A banner when the leader changes, with the time this page learned of it. */
function noteLeader(c) {
  const prev = state.leader;
  state.leader = c.leader;
  const was = state.lastLeader;
  if (c.leader !== null) state.lastLeader = c.leader;
  if (prev === undefined || prev === c.leader) return;
  const now = Date.now();
  const banner = $('#banner');
  banner.hidden = false;
  if (c.leader === null) {
    state.noLeaderSince = now;
    banner.className = 'banner banner-warn';
    banner.textContent = `${fmtTime(now)}  No leader: ${was ?? 'the leader'} is unreachable or lost its majority; an election is under way.`;
  } else {
    const gap = state.noLeaderSince === null ? '' : `; no leader for ${((now - state.noLeaderSince) / 1000).toFixed(1)} s`;
    state.noLeaderSince = null;
    banner.className = 'banner banner-ok';
    banner.textContent = `${fmtTime(now)}  New leader: ${c.leader} (term ${c.term})${was && was !== c.leader ? `, was ${was}` : ''}${gap}.`;
  }
  banner.setAttribute('data-leader', c.leader ?? '');
}

// ---- locks and elections ----------------------------------------------------------------

function lockState(l) {
  if (l.delayed) return l.lockDelayMs !== null ? `lock-delay ${l.lockDelayMs} ms` : 'lock-delay';
  if (l.holders.length === 0) return l.waiters ? 'free, waiters queued' : 'free';
  return l.limit ? `held (${l.holders.length}/${l.limit})` : 'held';
}

function renderLocks(page) {
  state.total = page.total;
  $('#locks-count').textContent = `${page.total}`;
  $('#locks-asof').textContent = `as applied on ${page.node} at index ${page.appliedIndex}`;
  const first = page.total === 0 ? 0 : page.offset + 1;
  $('#page-info').textContent = `${first}–${page.offset + page.rows.length} of ${page.total}`;
  $('#prev').disabled = page.offset === 0;
  $('#next').disabled = page.offset + page.rows.length >= page.total;
  $('#locks tbody').replaceChildren(
    ...page.rows.map((l) => {
      const holders = l.holders;
      const waiters = l.waiters
        ? `${l.waiters} (next: ${l.nextWaiters.map((w) => `s${w.session}${w.mode === 'shared' ? ' shared' : ''}`).join(', ')}${l.waiters > l.nextWaiters.length ? ', …' : ''})`
        : '0';
      return el(
        'tr',
        { 'data-lock': l.name },
        td(l.name, 'name'),
        td(l.mode ?? '—'),
        el(
          'td',
          { class: 'num' },
          ...(holders.length ? holders.flatMap((h, i) => [i ? ', ' : '', String(h.session), h.label ? el('span', { class: 'label' }, ` (${h.label})`) : '']) : ['—']),
        ),
        el('td', { class: 'num token', 'data-testid': 'token' }, holders.length ? holders.map((h) => h.token).join(', ') : '—'),
        td(holders.length ? holders.map(fmtHold).join('; ') : '—'),
        td(waiters),
        td(lockState(l), l.delayed ? 'warn' : ''),
      );
    }),
  );
}

function renderElections(page) {
  $('#elections-count').textContent = `${page.total}`;
  $('#elections tbody').replaceChildren(
    ...page.rows.map((e) =>
      el('tr', { 'data-election': e.name }, td(e.name, 'name'), td(e.leader ?? '—', 'num'), td(e.value ?? '—'), td(e.token ?? '—', 'num'), td(e.candidates, 'num')),
    ),
  );
}

function fmtAgo(ms) {
  return ms === null || ms === undefined ? '—' : `${fmtSeconds(ms)} ago`;
}

function renderSessions(page) {
  $('#sessions-count').textContent = `${page.total}`;
  $('#sessions tbody').replaceChildren(
    ...page.rows.map((s) => {
      const holds = [...s.locks.map((l) => `${l.name} #${l.token}`), ...s.elections.map((e) => `election ${e}`)].join(', ') || '—';
      const button = el('button', { type: 'button', class: 'revoke', 'data-session': s.session }, 'Revoke');
      button.addEventListener('click', () => void revokeSession(s));
      return el(
        'tr',
        { 'data-session': s.session },
        td(s.session, 'num'),
        td(s.label ?? '—', 'name'),
        td(s.owner ?? '—'),
        td(fmtSeconds(s.ttlMs), 'num'),
        td(fmtAgo(s.sinceKeepAliveMs)),
        td(holds),
        td(s.waits.map((w) => w.name).join(', ') || '—'),
        td(s.ephemeralKeys.join(', ') || '—'),
        el('td', {}, button),
      );
    }),
  );
}

/** Revoke through the node that served the page, with the admin token typed in the page. */
async function revokeSession(s) {
  const result = $('#sessions-result');
  const token = $('#admin-token').value.trim();
  if (token === '') {
    result.textContent = 'revoking needs an admin token: type it in "Admin token"';
    return;
  }
  const reason = window.prompt(`Revoke session ${s.session} (${s.label ?? 'no label'})? Its locks are freed after their lock-delay. Reason, for the audit log:`);
  if (reason === null || reason.trim() === '') return;
  try {
    const res = await fetch('/api/sessions/revoke', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ session: s.session, reason: reason.trim() }),
    });
    const body = await res.json();
    result.textContent = res.ok ? `revoked session ${s.session} (entry ${body.index})` : `not revoked: ${body.error}`;
  } catch (e) {
    result.textContent = `not revoked: ${e.message}`;
  }
  void refreshTables();
}

async function getJson(path) {
  const res = await fetch(path, { cache: 'no-store' });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return res.json();
}

/** Fetch the visible lock page and elections; coalesce bursts of change hints. */
async function refreshTables() {
  if (state.tablesInFlight) {
    state.tablesAgain = true;
    return;
  }
  const wait = state.lastTablesAt + TABLE_REFRESH_MS - Date.now();
  if (wait > 0) {
    state.tablesInFlight = true;
    await new Promise((r) => setTimeout(r, wait));
  }
  state.tablesInFlight = true;
  state.tablesAgain = false;
  try {
    const q = new URLSearchParams({ prefix: state.prefix, offset: String(state.offset), limit: String(PAGE_SIZE) });
    const sq = new URLSearchParams({ prefix: state.sessionPrefix, limit: String(PAGE_SIZE) });
    const [locks, elections, sessions] = await Promise.all([getJson(`/api/locks?${q}`), getJson('/api/elections?limit=50'), getJson(`/api/sessions?${sq}`)]);
    if (locks.rows.length === 0 && locks.offset > 0 && locks.total > 0) {
      // The page we were on emptied: go to the last one that has rows.
      state.offset = Math.max(0, Math.floor((locks.total - 1) / PAGE_SIZE) * PAGE_SIZE);
      state.tablesAgain = true;
    } else {
      renderLocks(locks);
    }
    renderElections(elections);
    renderSessions(sessions);
  } catch (e) {
    console.warn('refreshing tables failed', e);
  } finally {
    state.lastTablesAt = Date.now();
    state.tablesInFlight = false;
  }
  if (state.tablesAgain) void refreshTables();
}

// ---- events --------------------------------------------------------------------------

function addEvents(events) {
  const fresh = events.filter((e) => e.seq > state.lastSeq);
  if (fresh.length === 0) return;
  state.lastSeq = fresh[fresh.length - 1].seq;
  state.events = [...state.events, ...fresh].slice(-EVENTS_SHOWN);
  $('#events').replaceChildren(
    ...state.events
      .slice()
      .reverse()
      .map((e) =>
        el(
          'li',
          { class: `ev ev-${e.kind}${e.replayed ? ' ev-replayed' : ''}`, 'data-kind': e.kind, 'data-replayed': e.replayed ? 'true' : null },
          el('time', {}, fmtTime(e.at)),
          ' ',
          e.text,
          // Re-applied from the node's own log at start-up: the time is the replay's.
          e.replayed ? el('span', { class: 'tag', title: 'replayed from the log when this node started; the time is the replay\'s' }, 'replayed') : '',
        ),
      ),
  );
}

// ---- live connection -----------------------------------------------------------------

function setConn(stateName, text) {
  const c = $('#conn');
  c.dataset.state = stateName;
  c.className = `conn conn-${stateName}`;
  c.textContent = text;
}

function connect() {
  const es = new EventSource('/api/events');
  es.addEventListener('open', () => {
    if (state.cluster?.leader === null) setConn('noleader', 'live · no leader');
    else setConn('live', 'live');
    void refreshTables();
  });
  es.addEventListener('error', () => {
    // EventSource reconnects by itself (the node asks for a retry within a second).
    setConn('lost', `connection to ${state.cluster?.self ?? 'the node'} lost: retrying…`);
  });
  es.addEventListener('cluster', (m) => renderCluster(JSON.parse(m.data)));
  es.addEventListener('events', (m) => {
    const data = JSON.parse(m.data);
    if (data.dropped > 0) {
      // More happened than one push carries: fetch the tail instead.
      void getJson('/api/recent?limit=200').then((r) => addEvents(r.events));
    }
    addEvents(data.events);
  });
  es.addEventListener('locks', () => void refreshTables());
}

$('#locks-filter').addEventListener('submit', (ev) => {
  ev.preventDefault();
  state.prefix = $('#prefix').value;
  state.offset = 0;
  void refreshTables();
});
$('#sessions-tools').addEventListener('submit', (ev) => {
  ev.preventDefault();
  state.sessionPrefix = $('#session-prefix').value;
  void refreshTables();
});
$('#prev').addEventListener('click', () => {
  state.offset = Math.max(0, state.offset - PAGE_SIZE);
  void refreshTables();
});
$('#next').addEventListener('click', () => {
  if (state.offset + PAGE_SIZE < state.total) state.offset += PAGE_SIZE;
  void refreshTables();
});

connect();
