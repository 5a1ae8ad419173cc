import type { ServerResponse } from 'node:http';

const PAGE = Buffer.from(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>tollgate usage</title></head>
<body><main><h1>Key usage</h1>
<form id="f"><label for="k">API key</label> <input id="k" type="password" autocomplete="off" required> <button>Check</button></form>
<pre id="out" aria-live="polite"></pre></main>
<script>
document.getElementById('f').addEventListener('submit', async (e) => {
  e.preventDefault();
  const r = await fetch('usage/api', { headers: { authorization: 'Bearer ' + document.getElementById('k').value } });
  document.getElementById('out').textContent = JSON.stringify(await r.json(), null, 2);
});
</script></body></html>`);

const HEADERS = [
  'content-type', 'text/html; charset=utf-8',
  'content-length', String(PAGE.length),
  'cache-control', 'no-store',
  'content-security-policy', "default-src 'none'; script-src 'unsafe-inline'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options', 'nosniff',
  'referrer-policy', 'no-referrer',
];

/** GET /usage: the public usage checker page. */
export function serveUsagePage(res: ServerResponse): void {
  res.writeHead(200, HEADERS);
  res.end(PAGE);
}
