import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { withRequestId } from '../http/headers.js';
import { BODY } from './page/markup.js';
import { SCRIPT } from './page/script.js';
import { STYLE } from './page/style.js';

if (SCRIPT.toLowerCase().includes('</script')) throw new Error('usage page script must not contain a closing script tag');
if (STYLE.toLowerCase().includes('</style')) throw new Error('usage page style must not contain a closing style tag');

const sha256 = (text: string): string => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/**
 * One self-contained document: the stylesheet and the script are inline and the policy
 * allows exactly them, by hash. The page talks to `/usage/api` on its own origin and to
 * nothing else; the CSV download is a local blob.
 */
const PAGE = Buffer.from(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="color-scheme" content="light dark">
<title>Key usage · tollgate</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
${BODY}
<script>${SCRIPT}</script>
</body>
</html>
`);

/** The page's Content-Security-Policy: nothing but its own inline style and script, and its own API. */
export const USAGE_PAGE_CSP = [
  "default-src 'none'",
  `script-src ${sha256(SCRIPT)}`,
  `style-src ${sha256(STYLE)}`,
  "connect-src 'self'",
  'img-src data:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

const HEADERS = [
  'content-type', 'text/html; charset=utf-8',
  'content-length', String(PAGE.length),
  'cache-control', 'no-store',
  'content-security-policy', USAGE_PAGE_CSP,
  'x-content-type-options', 'nosniff',
  'referrer-policy', 'no-referrer',
  'x-frame-options', 'DENY',
  'cross-origin-opener-policy', 'same-origin',
  'cross-origin-resource-policy', 'same-origin',
  'permissions-policy', 'camera=(), microphone=(), geolocation=(), payment=()',
];

/** GET /usage: the public usage checker page. */
export function serveUsagePage(res: ServerResponse, requestId: string): void {
  res.writeHead(200, withRequestId(HEADERS, requestId));
  res.end(PAGE);
}
