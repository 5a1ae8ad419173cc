import { KEY_FORMAT } from '../../auth/keys.js';

/**
 * The usage checker's script, inlined into the page and allowed by its hash in the
 * Content-Security-Policy. It reads `GET /usage/api` with the key in the Authorization
 * header and draws the report with DOM calls only. The key lives in one variable for the
 * tab's lifetime, or in localStorage when the holder asks for it to be remembered; it is
 * never put in a URL and never written to the console.
 */
export const SCRIPT = String.raw`(() => {
'use strict';
const PAGE_SIZE = 20;
// The gateway's key format: anything else is unknown to it, and is not sent (it may be another service's secret).
const KEY_FORMAT = new RegExp(${JSON.stringify(KEY_FORMAT.source)});
const STORE_KEY = 'tollgate.usage.key';
const SVG_NS = 'http://www.w3.org/2000/svg';
const path = location.pathname.replace(/\/+$/, '');
const API = path + '/api';
const BASE = location.origin + path.replace(/\/usage$/, '');

const $ = (id) => document.getElementById(id);
const form = $('check'), input = $('key'), reveal = $('reveal'), remember = $('remember');
const forgetButton = $('forget'), statusLine = $('status'), problem = $('problem'), report = $('report');
const moreButton = $('more'), csvButton = $('csv');
const LABELS = new Map([[$('submit'), $('submit').textContent], [moreButton, moreButton.textContent]]);

let key = null;        // the key of the report on screen, in memory only
let info = null;       // the key part of the last answer
let rows = [];         // requests loaded so far, newest first
let next = null;       // cursor for the next page, or null when everything is loaded
let pending = null;    // AbortController of the request in flight

// ── small helpers ─────────────────────────────────────────────────────────
function el(tag, props, ...kids) {
  const e = document.createElement(tag);
  if (props) {
    for (const name of Object.keys(props)) {
      const v = props[name];
      if (v === null || v === undefined || v === false) continue;
      if (name === 'text') e.textContent = String(v);
      else if (name === 'class') e.className = v;
      else e.setAttribute(name, v === true ? '' : String(v));
    }
  }
  return put(e, ...kids);
}
/** Appends what is there: a left-out part (null, undefined, false) is skipped, never shown as text ("null"). */
function put(node, ...kids) {
  for (const kid of kids) if (kid !== null && kid !== undefined && kid !== false) node.append(kid);
  return node;
}
function svg(tag, attrs, ...kids) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const name of Object.keys(attrs)) e.setAttribute(name, String(attrs[name]));
  for (const kid of kids) e.append(kid);
  return e;
}
function clear(node) { while (node.firstChild) node.firstChild.remove(); }
let sayTimer = 0;
function say(text) {
  // Emptied first, so that the same message is announced again; the last message wins.
  window.clearTimeout(sayTimer);
  statusLine.textContent = '';
  if (text) sayTimer = window.setTimeout(() => { statusLine.textContent = text; }, 30);
}
const remembered = {
  get() { try { return localStorage.getItem(STORE_KEY); } catch { return null; } },
  set(value) { try { localStorage.setItem(STORE_KEY, value); return true; } catch { return false; } },
  clear() { try { localStorage.removeItem(STORE_KEY); } catch { /* storage unavailable */ } },
};

const int = new Intl.NumberFormat('en-US');
const fmtInt = (n) => int.format(n);
const plural = (n, one, many) => fmtInt(n) + ' ' + (n === 1 ? one : many);
/** "4.123456" or "-0.5" (the API's exact decimal text) → "$4.123456". */
function usd(text) {
  const s = String(text === null || text === undefined ? '0.000000' : text);
  const neg = s.startsWith('-');
  const parts = (neg ? s.slice(1) : s).split('.');
  return (neg ? '-' : '') + '$' + int.format(Number(parts[0])) + (parts.length > 1 ? '.' + parts[1] : '');
}
/** Integer nano-dollars → "$0.000123" (six decimals, half away from zero). */
function usdNano(nano) {
  const micro = Math.round(Math.abs(nano) / 1000);
  const frac = String(micro % 1000000).padStart(6, '0');
  return (nano < 0 && micro > 0 ? '-' : '') + '$' + int.format(Math.floor(micro / 1000000)) + '.' + frac;
}
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const pad = (n) => String(n).padStart(2, '0');
function stamp(iso) {
  const d = new Date(iso);
  return d.getUTCFullYear() + '-' + pad(d.getUTCMonth() + 1) + '-' + pad(d.getUTCDate()) + ' ' +
    pad(d.getUTCHours()) + ':' + pad(d.getUTCMinutes()) + ':' + pad(d.getUTCSeconds());
}
function longDate(iso) {
  const d = new Date(iso);
  return d.getUTCDate() + ' ' + MONTHS[d.getUTCMonth()] + ' ' + d.getUTCFullYear() + ', ' + pad(d.getUTCHours()) + ':' + pad(d.getUTCMinutes()) + ' UTC';
}
/** When a key stops working: a key set to expire on a date stops at the end of that day (UTC). */
function expiryText(iso) {
  const d = new Date(iso);
  if (d.getUTCHours() === 23 && d.getUTCMinutes() === 59 && d.getUTCSeconds() === 59 && d.getUTCMilliseconds() === 999) {
    return 'the end of ' + d.getUTCDate() + ' ' + MONTHS[d.getUTCMonth()] + ' ' + d.getUTCFullYear() + ' (UTC)';
  }
  return longDate(iso);
}
function dayName(day) { return Number(day.slice(8, 10)) + ' ' + MONTHS[Number(day.slice(5, 7)) - 1]; }
function fromNow(iso) {
  const ms = new Date(iso).getTime() - Date.now();
  const abs = Math.abs(ms);
  const text = abs >= 730 * 86400000 ? plural(Math.floor(abs / (365.25 * 86400000)), 'year', 'years')
    : abs >= 2 * 86400000 ? plural(Math.round(abs / 86400000), 'day', 'days')
    : abs >= 2 * 3600000 ? plural(Math.round(abs / 3600000), 'hour', 'hours')
    : plural(Math.max(1, Math.round(abs / 60000)), 'minute', 'minutes');
  return ms >= 0 ? 'in ' + text : text + ' ago';
}
const ENDPOINTS = { chat: 'Chat', responses: 'Responses', messages: 'Messages', models: 'Models' };
const surfaceBase = (mode) => BASE + (mode === 'token' ? '/token/v1' : '/v1');

// ── the verdict: why calls would fail now, in plain words ────────────────
// The gateway's checks after the first that fails, as /usage/api's state orders them: past its
// expiry (the expiry instant itself still works); no funds once what calls in flight hold counts.
function expired(k) { return k.expiresAt !== null && Date.now() > new Date(k.expiresAt).getTime(); }
function fundsOut(k) {
  return k.mode === 'credit' ? k.balanceNanoUsd - k.heldNanoUsd <= 0 : k.usedTokens + k.heldTokens >= k.budgetTokens;
}
/** What to ask for when the funds are out too, and why: [remedy, reason]. */
function refill(k) {
  return k.mode === 'credit' ? ['top it up', 'it also has no credit left'] : ['renew its budget', 'it has also used up its tokens'];
}
function verdict(k) {
  const code = (status, c) => el('span', null, 'Clients get HTTP ' + status + ' with error code ', el('code', { text: c }), '.');
  switch (k.state) {
    case 'ok': {
      const detail = el('span', null, 'If a call still fails, check that the model is one this key allows, that the client uses the base URL ',
        el('code', { text: surfaceBase(k.mode) }), ' (this is a ' + k.mode + ' key)',
        k.rateLimitRpm === null ? '' : ', and that it stays under ' + plural(k.rateLimitRpm, 'request', 'requests') + ' a minute', '.');
      if (k.expiresAt !== null) detail.append(' The key works until ' + expiryText(k.expiresAt) + ', ' + fromNow(k.expiresAt) + '.');
      return { tone: 'ok', badge: 'Working', sentence: 'Calls with this key go through: it is active and has ' + (k.mode === 'credit' ? 'credit' : 'budget') + ' left.', detail };
    }
    case 'suspended': {
      // The state names the first check that fails; what comes after it must be mended too.
      const also = [];
      if (expired(k)) also.push('extend it (it also expired at ' + expiryText(k.expiresAt) + ')');
      if (fundsOut(k)) also.push(refill(k)[0] + ' (' + refill(k)[1] + ')');
      return { tone: 'bad', badge: 'Suspended', sentence: 'Calls with this key fail because its issuer has suspended it.',
        detail: el('span', null, also.length === 0 ? 'Ask whoever gave you the key to resume it; the same key then works again. '
          : 'Ask whoever gave you the key to resume it and to ' + also.join(' and to ') + '; only then does the same key work again. ', code(403, 'key_suspended')) };
    }
    case 'expired':
      return { tone: 'bad', badge: 'Expired', sentence: 'Calls with this key fail because it expired at ' + expiryText(k.expiresAt) + '.',
        detail: el('span', null, fundsOut(k)
          ? 'Ask whoever gave you the key to extend it and to ' + refill(k)[0] + ': ' + refill(k)[1] + '. '
          : 'Ask whoever gave you the key to extend it, even if it has ' + (k.mode === 'credit' ? 'credit' : 'budget') + ' left. ', code(403, 'key_expired')) };
    case 'insufficient_credit':
      return { tone: 'bad', badge: 'Out of credit', sentence: 'Calls with this key fail because it has no credit left (balance ' + usd(k.balanceUsd) + ')' +
        (k.balanceNanoUsd < 0 ? '; it owes ' + usdNano(-k.balanceNanoUsd) + '.' : '.'),
        detail: el('span', null, 'Ask whoever gave you the key for a top-up. ', code(402, 'insufficient_credit')) };
    case 'token_budget_exhausted':
      return { tone: 'bad', badge: 'Budget used up', sentence: 'Calls with this key fail because it has used up its token budget (' + fmtInt(k.usedTokens) + ' of ' + fmtInt(k.budgetTokens) + ' tokens' +
        (k.overdraftTokens > 0 ? ', ' + fmtInt(k.overdraftTokens) + ' over' : '') + ').',
        detail: el('span', null, 'Ask whoever gave you the key to renew the budget. ', code(402, 'token_budget_exhausted')) };
    default:
      return { tone: 'warn', badge: 'Unknown', sentence: 'Calls with this key may fail (' + String(k.state) + ').', detail: el('span') };
  }
}

// ── drawing the report ─────────────────────────────────────────────────────
function meter(share, label, alarm) {
  const fill = el('div', { class: 'fill' + (alarm && share >= 1 ? ' full' : '') });
  fill.style.width = (Math.max(0, Math.min(1, share)) * 100).toFixed(2) + '%';
  return el('div', { class: 'meter', role: 'img', 'aria-label': label }, fill);
}

function drawHead(k) {
  $('report-title').textContent = 'Key ' + k.prefix + '…';
  $('report-sub').textContent = (k.name ? k.name + ' · ' : '') + (k.mode === 'credit' ? 'credit key (US dollars)' : 'token key (token budget)');
  const v = verdict(k);
  $('verdict').className = 'panel verdict' + (v.tone === 'ok' ? '' : ' ' + v.tone);
  $('verdict-badge').textContent = v.badge;
  $('verdict-sentence').textContent = v.sentence;
  const detail = $('verdict-detail');
  clear(detail);
  detail.append(v.detail);
}

// Calls in flight hold their worst case until they end; say so, or the balance looks wrong.
function heldLine(amount) {
  return amount === null ? [] : [el('p', { id: 'held' }, amount + ' held by calls in progress (released, less what they cost, as each one ends).')];
}

function drawLeft(k, daily) {
  const box = $('left');
  clear(box);
  const spent = daily.reduce((n, d) => n + d.costNanoUsd, 0);
  const requests = daily.reduce((n, d) => n + d.requests, 0);
  const tokens = daily.reduce((n, d) => n + d.tokens, 0);
  if (k.mode === 'credit') {
    const today = daily.length > 0 ? daily[daily.length - 1].costNanoUsd : 0;
    $('left-title').textContent = 'Balance';
    put(box,
      el('p', { class: 'big', id: 'balance' }, usd(k.balanceUsd), ' ', el('span', { class: 'unit', text: k.balanceNanoUsd < 0 ? 'overdrawn' : 'left' })),
      ...heldLine(k.heldNanoUsd > 0 ? usd(k.heldUsd) : null),
      k.balanceNanoUsd < 0 ? el('p', { id: 'debt', class: 'debt' }, 'This key owes ' + usdNano(-k.balanceNanoUsd) +
        ': its last call cost more than was left. A top-up pays this first; calls work again once the balance is above zero.') : null,
      el('p', null, 'Spent today (UTC): ' + usdNano(today) + '.'),
      el('p', { class: 'muted' }, 'Spent in the last 30 days: ' + usdNano(spent) + ' on ' + plural(requests, 'request', 'requests') + '.'),
    );
  } else {
    $('left-title').textContent = 'Token budget';
    const share = k.budgetTokens > 0 ? k.usedTokens / k.budgetTokens : 1;
    const pct = (share * 100).toFixed(share > 0 && share < 0.001 ? 2 : 1) + '%';
    const over = k.overdraftTokens || 0;
    put(box,
      over > 0
        ? el('p', { class: 'big', id: 'balance' }, fmtInt(over), ' ', el('span', { class: 'unit', text: 'tokens over budget' }))
        : el('p', { class: 'big', id: 'balance' }, fmtInt(k.remainingTokens), ' ', el('span', { class: 'unit', text: 'tokens left' })),
      meter(share, pct + ' of the budget used', true),
      el('p', null, fmtInt(k.usedTokens) + ' of ' + fmtInt(k.budgetTokens) + ' tokens used (' + pct + ').'),
      ...heldLine(k.heldTokens > 0 ? plural(k.heldTokens, 'token', 'tokens') : null),
      over > 0 ? el('p', { id: 'debt', class: 'debt' }, 'This key used ' + plural(over, 'token', 'tokens') + ' more than its budget: its last call was counted in full. ' +
        'A renewal covers these first; calls work again once the budget is above the ' + fmtInt(k.usedTokens) + ' tokens used.') : null,
      el('p', { class: 'muted' }, 'Used in the last 30 days: ' + plural(tokens, 'token', 'tokens') + ' on ' + plural(requests, 'request', 'requests') + '.'),
    );
  }
}

function drawFacts(k) {
  const dl = $('facts');
  clear(dl);
  const add = (term, ...value) => dl.append(el('dt', { text: term }), el('dd', null, ...value));
  add('Prefix', el('code', { text: k.prefix }));
  if (k.name) add('Name', k.name);
  add('Surface', k.mode === 'credit' ? 'Credit: each call is paid from a balance in US dollars' : 'Token: each call draws input plus output tokens from a budget');
  add('Base URL', el('code', { text: surfaceBase(k.mode) }));
  add('Status', k.status === 'active' ? 'Active' : k.status === 'suspended' ? 'Suspended by its issuer' : String(k.status));
  if (k.expiresAt === null) add('Expires', 'Never');
  else {
    const when = expiryText(k.expiresAt);
    add('Expires', when.charAt(0).toUpperCase() + when.slice(1) + (expired(k) ? '; expired ' : ', ') + fromNow(k.expiresAt));
  }
  add('Models', k.models === null || k.models.length === 0 ? 'All models this gateway serves'
    : el('ul', { class: 'chips' }, ...k.models.map((m) => el('li', null, el('code', { text: m })))));
  add('Rate limit', k.rateLimitRpm === null ? 'No limit' : plural(k.rateLimitRpm, 'request', 'requests') + ' per minute');
  add('Calls at once', k.concurrency === null || k.concurrency === undefined ? 'No limit' : 'At most ' + plural(k.concurrency, 'call', 'calls') + ' in progress');
  if (k.createdAt) add('Created', longDate(k.createdAt));
}

function drawChart(k, daily) {
  const credit = k.mode === 'credit';
  const valueOf = (d) => (credit ? d.costNanoUsd : d.tokens);
  const show = (n) => (credit ? usdNano(n) : plural(n, 'token', 'tokens'));
  const axis = (n) => (credit ? usdNano(n) : fmtInt(n));
  $('chart-title').textContent = (credit ? 'Spend' : 'Tokens') + ' per day, last ' + daily.length + ' days';
  const values = daily.map(valueOf);
  const max = Math.max(0, ...values);
  const total = values.reduce((a, b) => a + b, 0);
  const requests = daily.reduce((n, d) => n + d.requests, 0);
  const busiest = daily[values.indexOf(max)];
  $('chart-summary').textContent = total === 0 && requests === 0
    ? 'No usage in the last ' + daily.length + ' days.'
    : 'Total ' + show(total) + ' over ' + plural(requests, 'request', 'requests') + (max === 0 ? '.' : '. Busiest day: ' + dayName(busiest.day) + ' (' + show(max) + ').');

  const W = 10 * daily.length, H = 100;
  const plot = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, preserveAspectRatio: 'none', role: 'img', 'aria-labelledby': 'chart-title chart-summary', focusable: 'false' });
  for (const y of [0, 50]) plot.append(svg('line', { class: 'grid-line', x1: 0, x2: W, y1: y + 0.5, y2: y + 0.5, 'vector-effect': 'non-scaling-stroke' }));
  daily.forEach((d, i) => {
    const v = values[i];
    let h = max > 0 ? (v / max) * (H - 1) : 0;
    if (v > 0 && h < 1.5) h = 1.5;
    const bar = svg('rect', { class: 'bar' + (i === daily.length - 1 ? ' today' : ''), x: i * 10 + 1.5, y: H - h, width: 7, height: h, 'data-day': d.day, 'data-value': v },
      svg('title', {}));
    bar.firstChild.textContent = dayName(d.day) + ': ' + show(v) + ', ' + plural(d.requests, 'request', 'requests');
    plot.append(bar);
  });
  const chart = $('chart');
  clear(chart);
  const mid = daily[Math.floor((daily.length - 1) / 2)];
  chart.append(el('div', { class: 'chart-wrap' },
    el('div', { class: 'y-labels', 'aria-hidden': 'true' }, el('span', { text: axis(max) }), el('span', { text: axis(Math.round(max / 2)) }), el('span', { text: axis(0) })),
    el('div', { class: 'plot' }, plot),
    el('div', { class: 'x-labels', 'aria-hidden': 'true' }, el('span', { text: dayName(daily[0].day) }), el('span', { text: dayName(mid.day) }), el('span', { text: 'Today' })),
  ));

  const table = $('chart-table');
  clear(table);
  const used = daily.filter((d) => d.requests > 0 || valueOf(d) > 0).reverse();
  if (used.length === 0) { table.append(el('p', { class: 'empty', text: 'No usage on any day.' })); return; }
  table.append(el('table', null,
    el('thead', null, el('tr', null, el('th', { scope: 'col', text: 'Day (UTC)' }), el('th', { scope: 'col', class: 'num', text: 'Requests' }), el('th', { scope: 'col', class: 'num', text: credit ? 'Spend' : 'Tokens' }))),
    el('tbody', null, ...used.map((d) => el('tr', null, el('td', { text: d.day }), el('td', { class: 'num', text: fmtInt(d.requests) }), el('td', { class: 'num', text: show(valueOf(d)) })))),
  ));
}

function drawModels(k, daily) {
  const credit = k.mode === 'credit';
  const sums = new Map();
  for (const d of daily) {
    for (const m of d.byModel) {
      const s = sums.get(m.model) || { model: m.model, requests: 0, costNanoUsd: 0, tokens: 0 };
      s.requests += m.requests; s.costNanoUsd += m.costNanoUsd; s.tokens += m.tokens;
      sums.set(m.model, s);
    }
  }
  const valueOf = (s) => (credit ? s.costNanoUsd : s.tokens);
  const list = [...sums.values()].sort((a, b) => valueOf(b) - valueOf(a) || b.requests - a.requests || (a.model < b.model ? -1 : 1));
  const total = list.reduce((n, s) => n + valueOf(s), 0);
  const box = $('models');
  clear(box);
  if (list.length === 0) { box.append(el('p', { class: 'empty', text: 'No requests in the last 30 days.' })); return; }
  box.append(el('ul', { class: 'models', id: 'model-list' }, ...list.map((s) => {
    const share = total > 0 ? valueOf(s) / total : 0;
    const pct = (share * 100).toFixed(1) + '%';
    const amount = credit ? usdNano(s.costNanoUsd) : plural(s.tokens, 'token', 'tokens');
    return el('li', null,
      el('div', { class: 'line' }, el('code', { text: s.model }), el('span', null, amount + ' · ' + plural(s.requests, 'request', 'requests') + ' · ' + pct)),
      meter(share, pct + ' of the ' + (credit ? 'spend' : 'tokens'), false));
  })));
}

// ── recent requests ──────────────────────────────────────────────────────
/** Why a record's tokens were estimated, in words (the API's estimateReason markers). */
function estimateText(reason) {
  if (!reason) return 'the provider reported no usage';
  const colon = reason.indexOf(':');
  const code = colon === -1 ? reason : reason.slice(0, colon);
  const field = colon === -1 ? '' : reason.slice(colon + 1);
  switch (code) {
    case 'usage_absent': return 'the provider reported no usage';
    case 'usage_malformed': return 'the provider\'s usage could not be parsed';
    case 'usage_field_missing': return 'the provider\'s usage had no ' + field;
    case 'usage_field_invalid': return 'the provider\'s usage had an unreadable ' + field;
    case 'usage_inconsistent': return 'the provider\'s usage had an impossible ' + field;
    case 'client_gone': return 'the client left and the provider was stopped before it reported usage';
    case 'unpriced_lever': return 'the provider reported an option this gateway has no price for';
    default: return reason;
  }
}

// [column heading, label of the value when rows are shown as cards, class]
const COLUMNS = () => [
  ['Time (UTC)', 'Time (UTC)', 'time'], ['Endpoint', 'Endpoint', ''], ['Model', 'Model', 'model'],
  ['Input tokens', 'Input tokens', 'num'], ['Output tokens', 'Output tokens', 'num'],
  info && info.mode === 'token' ? ['Tokens charged', 'Tokens charged', 'num'] : ['Cost', 'Cost', 'num'],
  ['Status', 'Status', ''], ['Note', 'Note', 'note'],
];

function requestRow(r) {
  const credit = info.mode === 'credit';
  const notes = [];
  if (r.error) notes.push(el('span', { class: 'note-bad' }, 'Error ', el('code', { text: r.error }), ' (not billed)'));
  if (r.estimated) notes.push(el('span', { class: 'note-warn', text: 'Estimated (' + estimateText(r.estimateReason) + ')' }));
  if (r.worstCase) notes.push(el('span', { class: 'note-warn' }, 'Priced at the highest rate (no price for ', el('code', { text: r.worstCase }), ')'));
  if (r.serviceTier && !['default', 'standard', 'auto'].includes(r.serviceTier)) notes.push(el('span', { text: r.serviceTier + ' tier' }));
  if (r.speed && r.speed !== 'standard') notes.push(el('span', { text: r.speed + ' speed' }));
  if (r.inferenceGeo && !['global', 'not_available'].includes(r.inferenceGeo)) notes.push(el('span', { text: 'Processed in ' + r.inferenceGeo }));
  if (r.longContext) notes.push(el('span', { text: 'Long-context rates' }));
  if (r.cacheWrite1hTokens) notes.push(el('span', { text: fmtInt(r.cacheWrite1hTokens) + ' tokens written to the 1-hour cache' }));
  const media = [['audio in', r.audioInputTokens], ['image in', r.imageInputTokens], ['audio out', r.audioOutputTokens], ['image out', r.imageOutputTokens]].filter((m) => m[1]);
  if (media.length > 0) notes.push(el('span', { text: media.map((m) => fmtInt(m[1]) + ' ' + m[0]).join(', ') + ' tokens' }));
  for (const [tool, n] of Object.entries(r.toolCalls || {})) notes.push(el('span', null, fmtInt(n) + ' ', el('code', { text: tool }), n === 1 ? ' call' : ' calls'));
  if (r.clientGone) notes.push(el('span', { text: 'Client left before the end' }));
  const noteCell = el('td', { role: 'cell', 'data-label': 'Note', class: 'note' });
  notes.forEach((n, i) => { if (i > 0) noteCell.append('; '); noteCell.append(n); });
  // The parts priced apart from plain input and output: cache reads and writes, reasoning.
  const inputParts = [];
  if (r.cachedInputTokens) inputParts.push(fmtInt(r.cachedInputTokens) + ' cached');
  if (r.cacheWriteTokens) inputParts.push(fmtInt(r.cacheWriteTokens) + ' written to the cache');
  const input = fmtInt(r.inputTokens) + (inputParts.length > 0 ? ' (' + inputParts.join(', ') + ')' : '');
  const output = fmtInt(r.outputTokens) + (r.reasoningTokens ? ' (' + fmtInt(r.reasoningTokens) + ' reasoning)' : '');
  const cols = COLUMNS();
  const cell = (i, ...kids) => el('td', { role: 'cell', 'data-label': cols[i][1], class: cols[i][2] || null }, ...kids);
  const ok = r.status >= 200 && r.status < 300 && !r.error;
  return el('tr', { role: 'row', tabindex: '-1', 'data-request-id': r.requestId },
    cell(0, el('time', { datetime: r.at, text: stamp(r.at) })),
    cell(1, ENDPOINTS[r.endpoint] || r.endpoint, r.stream ? el('span', null, ' ', el('span', { class: 'tag', text: 'stream' })) : null),
    cell(2, el('code', { text: r.model })),
    cell(3, input),
    cell(4, output),
    cell(5, credit ? usd(r.costUsd) : fmtInt(r.tokensCharged)),
    cell(6, el('span', { class: ok ? 'st-ok' : 'st-bad', text: String(r.status) + (ok ? ' OK' : '') })),
    noteCell,
  );
}

function drawRequests(added) {
  const wrap = $('requests-wrap');
  let body = $('requests-body');
  if (!body || !added) {
    clear(wrap);
    if (rows.length === 0) {
      wrap.append(el('p', { class: 'empty', text: 'No requests yet. Calls appear here once they have been forwarded to a model provider.' }));
    } else {
      body = el('tbody', { id: 'requests-body', role: 'rowgroup' });
      const cols = COLUMNS();
      wrap.append(el('table', { class: 'requests', id: 'requests', role: 'table', 'aria-labelledby': 'requests-title', 'aria-describedby': 'requests-summary' },
        el('thead', { role: 'rowgroup' }, el('tr', { role: 'row' }, ...cols.map((c) => el('th', { scope: 'col', role: 'columnheader', class: c[2] || null, text: c[0] })))),
        body));
      added = rows;
    }
  }
  const fresh = added ? added.map(requestRow) : [];
  if (body) body.append(...fresh);
  $('requests-summary').textContent = rows.length === 0 ? '' : (next === null
    ? (rows.length === 1 ? 'Showing the one request.' : 'Showing all ' + fmtInt(rows.length) + ' requests, newest first.')
    : 'Showing the newest ' + plural(rows.length, 'request', 'requests') + '.');
  moreButton.hidden = next === null;
  csvButton.hidden = rows.length === 0;
  return fresh;
}

// ── talking to the gateway ───────────────────────────────────────────────
async function ask(query) {
  if (pending) pending.abort();
  const ctl = new AbortController();
  pending = ctl;
  try {
    const res = await fetch(API + query, {
      headers: { authorization: 'Bearer ' + key, accept: 'application/json' },
      cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer', signal: ctl.signal,
    });
    let body = null;
    try { body = await res.json(); } catch { body = null; }
    return { status: res.status, body };
  } finally {
    if (pending === ctl) pending = null;
  }
}

function showProblem(title, text) {
  clear(problem);
  problem.append(el('strong', { text: title }), el('span', { text: text }));
  problem.hidden = false;
}
function hideProblem() { problem.hidden = true; clear(problem); input.removeAttribute('aria-invalid'); }
function hideReport() { report.hidden = true; info = null; rows = []; next = null; }
function busy(on, button) {
  for (const b of [$('submit'), moreButton]) b.setAttribute('aria-disabled', on ? 'true' : 'false');
  report.setAttribute('aria-busy', on ? 'true' : 'false');
  if (button) button.textContent = on ? (button === moreButton ? 'Loading…' : 'Checking…') : LABELS.get(button);
}
const aborted = (err) => err && err.name === 'AbortError';
function failed(status) {
  if (status === 401) {
    key = null;
    // A key kept on this device is the last one checked: once a check finds the key unknown (a
    // new paste, or the kept key revoked), keeping an older one would show its report on the next
    // visit as if it were this one's.
    remembered.clear();
    forgetButton.hidden = true;
    hideReport();
    input.setAttribute('aria-invalid', 'true');
    showProblem('This key is not recognised.', ' Check that you pasted all of it: a key starts with gw_live_ followed by 32 letters and digits. If it is complete, ask whoever gave it to you.');
    say('');  // the alert speaks for itself
    input.focus();
    input.select();
    return;
  }
  showProblem('The usage could not be loaded.', status === 0
    ? ' The gateway could not be reached. Check your connection and try again.'
    : ' The gateway answered with HTTP ' + status + '. Try again in a moment.');
  say('');  // the alert speaks for itself
}

async function check(value) {
  hideProblem();
  hideReport();
  if (value === '') {
    input.setAttribute('aria-invalid', 'true');
    showProblem('Paste your API key first.', ' It starts with gw_live_.');
    input.focus();
    return;
  }
  // Not this gateway's key (another service's secret, a cut or padded paste, a whole page of
  // text): answered as an unknown key without sending it anywhere.
  if (!KEY_FORMAT.test(value)) return failed(401);
  key = value;
  busy(false, moreButton);
  busy(true, $('submit'));
  say('Checking the key…');
  let res;
  try {
    res = await ask('?limit=' + PAGE_SIZE);
  } catch (err) {
    if (aborted(err)) return;
    busy(false, $('submit'));
    return failed(0);
  }
  busy(false, $('submit'));
  if (res.status !== 200 || !res.body || !res.body.key) return failed(res.status);
  const data = res.body;
  info = data.key;
  rows = data.requests.slice();
  next = data.nextBefore;
  if (remember.checked) remembered.set(key);
  else remembered.clear();
  forgetButton.hidden = false;
  drawHead(info);
  drawLeft(info, data.daily);
  drawFacts(info);
  drawChart(info, data.daily);
  drawModels(info, data.daily);
  drawRequests(null);
  report.hidden = false;
  $('report-title').focus();
  say('Usage loaded for key ' + info.prefix + '. ' + $('verdict-sentence').textContent);
}

async function loadMore() {
  if (next === null || key === null || moreButton.getAttribute('aria-disabled') === 'true') return;
  busy(true, moreButton);
  say('Loading more requests…');
  let res;
  try {
    res = await ask('?limit=' + PAGE_SIZE + '&days=1&before=' + encodeURIComponent(next));
  } catch (err) {
    if (aborted(err)) return;
    busy(false, moreButton);
    return failed(0);
  }
  busy(false, moreButton);
  if (res.status !== 200 || !res.body) return failed(res.status);
  const added = res.body.requests;
  rows = rows.concat(added);
  next = res.body.nextBefore;
  const fresh = drawRequests(added);
  if (fresh.length > 0) fresh[0].focus();
  else moreButton.focus();
  say('Loaded ' + plural(added.length, 'more request', 'more requests') + (next === null ? '; that is all of them.' : '.'));
}

// ── CSV of what is loaded ────────────────────────────────────────────────
const CSV_FIELDS = [
  ['time', 'at'], ['request_id', 'requestId'], ['endpoint', 'endpoint'], ['model', 'model'], ['stream', 'stream'],
  ['status', 'status'], ['input_tokens', 'inputTokens'], ['output_tokens', 'outputTokens'],
  ['cached_input_tokens', 'cachedInputTokens'], ['cache_write_tokens', 'cacheWriteTokens'], ['reasoning_tokens', 'reasoningTokens'],
  ['cost_usd', 'costUsd'], ['tokens_charged', 'tokensCharged'], ['error', 'error'], ['estimated', 'estimated'], ['client_gone', 'clientGone'],
  ['estimate_reason', 'estimateReason'], ['cache_write_1h_tokens', 'cacheWrite1hTokens'], ['audio_input_tokens', 'audioInputTokens'],
  ['image_input_tokens', 'imageInputTokens'], ['audio_output_tokens', 'audioOutputTokens'], ['image_output_tokens', 'imageOutputTokens'],
  ['tool_calls', 'toolCalls'], ['service_tier', 'serviceTier'], ['speed', 'speed'], ['inference_geo', 'inferenceGeo'], ['long_context', 'longContext'], ['worst_case', 'worstCase'],
  // Last, so the columns before keep their places: the exact charge (cost_usd is rounded to the
  // micro-dollar), whose sum is what the balance moved by.
  ['cost_nano_usd', 'costNanoUsd'],
];
function csvCell(v) {
  // Tool calls are an object: written as name=count pairs.
  let s = v === null || v === undefined ? '' : typeof v === 'object' ? Object.entries(v).map((e) => e[0] + '=' + e[1]).join(';') : String(v);
  // Text that a spreadsheet would run as a formula is quoted with a leading apostrophe.
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s)) s = "'" + s;
  return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}
function downloadCsv() {
  if (!info || rows.length === 0) return;
  const lines = [CSV_FIELDS.map((f) => f[0]).join(',')];
  for (const r of rows) lines.push(CSV_FIELDS.map((f) => csvCell(r[f[1]])).join(','));
  const blob = new Blob([lines.join('\r\n') + '\r\n'], { type: 'text/csv;charset=utf-8' });
  const url = URL.createObjectURL(blob);
  const link = el('a', { href: url, download: 'usage-' + info.prefix + '-' + new Date().toISOString().slice(0, 10) + '.csv', hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 60000);
  say('Downloaded ' + plural(rows.length, 'request', 'requests') + ' as CSV.');
}

// ── wiring ───────────────────────────────────────────────────────────────
form.addEventListener('submit', (event) => {
  event.preventDefault();
  void check(input.value.trim());
});
input.addEventListener('input', () => input.removeAttribute('aria-invalid'));
reveal.addEventListener('click', () => {
  const showing = input.type === 'text';
  input.type = showing ? 'password' : 'text';
  reveal.setAttribute('aria-pressed', showing ? 'false' : 'true');
});
remember.addEventListener('change', () => {
  if (remember.checked) {
    if (key !== null && info !== null) {
      say(remembered.set(key) ? 'The key will be remembered on this device.' : 'This browser does not allow remembering the key.');
    } else say('The key will be remembered on this device once it has been checked.');
  } else {
    remembered.clear();
    say('The key is no longer remembered on this device.');
  }
});
forgetButton.addEventListener('click', () => {
  if (pending) pending.abort();
  busy(false, $('submit'));
  busy(false, moreButton);
  remembered.clear();
  key = null;
  input.value = '';
  remember.checked = false;
  hideProblem();
  hideReport();
  forgetButton.hidden = true;
  input.focus();
  say('The key was forgotten on this page and on this device.');
});
moreButton.addEventListener('click', () => { void loadMore(); });
csvButton.addEventListener('click', downloadCsv);

const saved = remembered.get();
if (saved) {
  input.value = saved;
  remember.checked = true;
  forgetButton.hidden = false;
  void check(saved);
}
})();`;
