/**
 * The usage checker's static markup. The script fills the report in with DOM calls only
 * (never HTML strings), so nothing a response contains is ever parsed as markup.
 */
export const BODY = String.raw`<main id="main">
<header>
<h1>Key usage</h1>
<p class="lede">Paste your API key to see what it has left, whether calls with it go through right now, and what it was spent on.</p>
</header>

<form id="check" class="panel" novalidate>
  <div class="field">
    <label for="key">API key</label>
    <div class="keyrow">
      <input id="key" type="password" autocomplete="off" autocapitalize="off" autocorrect="off" spellcheck="false" placeholder="gw_live_…" aria-describedby="key-hint problem">
      <button type="button" id="reveal" class="secondary" aria-controls="key" aria-pressed="false" aria-label="Show key">Show</button>
    </div>
    <p id="key-hint" class="hint">The key is sent only to this gateway, in a request header; it never goes into a web address. It is kept only while this page is open (a reload forgets it), unless you tick “Remember on this device”.</p>
  </div>
  <div class="check">
    <input type="checkbox" id="remember">
    <label for="remember">Remember on this device</label>
  </div>
  <div class="actions">
    <button type="submit" id="submit">Check usage</button>
    <button type="button" id="forget" class="secondary" hidden>Forget key</button>
  </div>
</form>

<p id="status" class="visually-hidden" role="status" aria-live="polite"></p>
<div id="problem" class="problem" role="alert" hidden></div>

<section id="report" aria-labelledby="report-title" hidden>
  <div class="report-head">
    <h2 id="report-title" tabindex="-1"></h2>
    <span id="report-sub" class="sub"></span>
  </div>

  <div id="verdict" class="panel verdict">
    <span id="verdict-badge" class="badge"></span>
    <p id="verdict-sentence" class="sentence"></p>
    <p id="verdict-detail" class="detail"></p>
  </div>

  <div class="grid">
    <section class="panel" aria-labelledby="left-title">
      <h3 id="left-title"></h3>
      <div id="left"></div>
    </section>
    <section class="panel" aria-labelledby="facts-title">
      <h3 id="facts-title">About this key</h3>
      <dl id="facts" class="facts"></dl>
    </section>
  </div>

  <section class="panel" aria-labelledby="chart-title">
    <h3 id="chart-title"></h3>
    <p id="chart-summary"></p>
    <div id="chart"></div>
    <details>
      <summary>Show the days as a table</summary>
      <div id="chart-table"></div>
    </details>
  </section>

  <section class="panel" aria-labelledby="models-title">
    <h3 id="models-title">By model, last 30 days</h3>
    <div id="models"></div>
  </section>

  <section class="panel" aria-labelledby="requests-title">
    <h3 id="requests-title">Recent requests</h3>
    <p id="requests-summary" class="muted"></p>
    <div class="table-wrap" id="requests-wrap"></div>
    <div class="actions">
      <button type="button" id="more" class="secondary">Load more</button>
      <button type="button" id="csv" class="secondary">Download CSV</button>
    </div>
  </section>
</section>

<footer>
<p>Times and days are in UTC. Only calls forwarded to a model provider are listed; calls the gateway refused (unknown key, no credit, over the rate limit…) are never billed and never listed.</p>
</footer>
</main>`;
