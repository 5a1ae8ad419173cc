/**
 * The usage checker's stylesheet, inlined into the page and allowed by its hash in the
 * Content-Security-Policy. System fonts only: the page loads nothing from anywhere.
 */
export const STYLE = String.raw`
:root {
  color-scheme: light dark;
  --bg: #f4f6f8; --panel: #ffffff; --text: #15191e; --muted: #4b5561; --line: #d3d9e0;
  --accent: #0b57d0; --accent-text: #ffffff; --bar: #3a78e0; --bar-today: #0b3f9e; --track: #e2e7ed;
  --ok-bg: #e6f4ea; --ok: #0b6430; --bad-bg: #fdeceb; --bad: #a3141a; --warn-bg: #fff3d6; --warn: #6e4300;
  --focus: #0b57d0; --code-bg: #eef1f5;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #101316; --panel: #1a1e23; --text: #eef1f4; --muted: #b4bdc7; --line: #38414b;
    --accent: #8ab4f8; --accent-text: #0a1a33; --bar: #6d9df2; --bar-today: #b0ccff; --track: #2b323a;
    --ok-bg: #11301c; --ok: #86e0a4; --bad-bg: #3b1517; --bad: #ffb4b0; --warn-bg: #3a2a08; --warn: #ffd584;
    --focus: #8ab4f8; --code-bg: #262c33;
  }
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body {
  margin: 0; background: var(--bg); color: var(--text);
  font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "DejaVu Sans", Arial, sans-serif;
}
main { max-width: 1080px; margin: 0 auto; padding: 28px 20px 56px; }
h1 { font-size: 1.75rem; line-height: 1.2; margin: 0 0 .35rem; }
h2 { font-size: 1.35rem; line-height: 1.25; margin: 0; }
h3 { font-size: 1.05rem; margin: 0 0 .6rem; }
p { margin: 0 0 .5rem; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: .92em; }
code { background: var(--code-bg); padding: .05em .35em; border-radius: 4px; overflow-wrap: anywhere; }
.lede { color: var(--muted); max-width: 46rem; }
.visually-hidden {
  position: absolute !important; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden;
  clip: rect(0 0 0 0); white-space: nowrap; border: 0;
}
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
[tabindex="-1"]:focus:not(:focus-visible) { outline: none; }

.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 18px 20px; }
form.panel { margin: 18px 0 14px; }
label { font-weight: 600; }
.field label { display: block; margin-bottom: .3rem; }
.keyrow { display: flex; gap: 8px; }
.keyrow input { flex: 1 1 auto; min-width: 0; }
input[type="password"], input[type="text"] {
  font: inherit; font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace;
  padding: .6rem .7rem; border: 1px solid #6b7682; border-radius: 6px; background: var(--panel); color: var(--text);
}
input[aria-invalid="true"] { border-color: var(--bad); box-shadow: 0 0 0 1px var(--bad); }
.hint { color: var(--muted); font-size: .9rem; margin: .4rem 0 0; }
.check { display: flex; align-items: center; gap: .5rem; margin: .8rem 0; }
.check input { width: 1.15rem; height: 1.15rem; margin: 0; accent-color: var(--accent); }
.check label { font-weight: 500; }
.actions { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; }
button {
  font: inherit; font-weight: 600; cursor: pointer; border-radius: 6px; padding: .55rem 1rem; min-height: 44px;
  border: 1px solid var(--accent); background: var(--accent); color: var(--accent-text);
}
button.secondary { background: var(--panel); color: var(--accent); }
button.secondary[aria-pressed="true"] { background: var(--accent); color: var(--accent-text); }
button:disabled, button[aria-disabled="true"] { opacity: .6; cursor: progress; }

.problem {
  border: 1px solid var(--bad); border-left-width: 6px; background: var(--bad-bg); color: var(--text);
  border-radius: 8px; padding: 14px 16px; margin: 0 0 16px;
}
.problem strong { color: var(--bad); display: block; font-size: 1.1rem; margin-bottom: .2rem; }

#report { display: grid; gap: 16px; grid-template-columns: minmax(0, 1fr); }
#report[hidden] { display: none; }
.report-head { display: flex; flex-wrap: wrap; align-items: baseline; gap: 6px 14px; }
.report-head .sub { color: var(--muted); overflow-wrap: anywhere; min-width: 0; }
.verdict { border-left: 6px solid var(--ok); background: var(--ok-bg); }
.verdict.bad { border-left-color: var(--bad); background: var(--bad-bg); }
.verdict.warn { border-left-color: var(--warn); background: var(--warn-bg); }
.verdict .badge {
  display: inline-block; font-weight: 700; font-size: .8rem; letter-spacing: .04em; text-transform: uppercase;
  padding: .1rem .55rem; border-radius: 999px; background: var(--ok); color: var(--panel); margin-bottom: .4rem;
}
.verdict.bad .badge { background: var(--bad); }
.verdict.warn .badge { background: var(--warn); }
.verdict .sentence { font-size: 1.2rem; font-weight: 600; line-height: 1.35; margin-bottom: .35rem; }
.verdict .detail { color: var(--text); margin: 0; }

.grid { display: grid; gap: 16px; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); align-items: start; }
.big { font-size: 2.2rem; font-weight: 700; line-height: 1.1; margin: 0 0 .35rem; overflow-wrap: anywhere; font-variant-numeric: tabular-nums; }
.big .unit { font-size: 1rem; font-weight: 600; color: var(--muted); }
.muted { color: var(--muted); }
.meter { height: 14px; background: var(--track); border-radius: 7px; overflow: hidden; margin: .5rem 0 .4rem; border: 1px solid var(--line); }
.meter .fill { height: 100%; width: 0; background: var(--bar); }
.meter .fill.full { background: var(--bad); }
dl.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 6px 16px; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.chips { display: flex; flex-wrap: wrap; gap: 4px; list-style: none; margin: 0; padding: 0; }
.chips li code { display: inline-block; }

.chart-wrap { display: grid; grid-template-columns: auto minmax(0, 1fr); gap: 4px 8px; margin-top: .4rem; }
.y-labels { display: flex; flex-direction: column; justify-content: space-between; text-align: right; font-size: .78rem; color: var(--muted); height: 180px; font-variant-numeric: tabular-nums; }
.plot { height: 180px; border-bottom: 1px solid var(--muted); }
.plot svg { display: block; width: 100%; height: 100%; }
.plot .grid-line { stroke: var(--line); stroke-width: 1; }
.plot .bar { fill: var(--bar); }
.plot .bar.today { fill: var(--bar-today); }
.x-labels { grid-column: 2; display: flex; justify-content: space-between; font-size: .78rem; color: var(--muted); }
details { margin-top: .6rem; }
summary { cursor: pointer; color: var(--accent); font-weight: 600; min-height: 32px; }

ul.models { list-style: none; margin: 0; padding: 0; display: grid; gap: 10px; }
ul.models .line { display: flex; flex-wrap: wrap; justify-content: space-between; gap: 2px 12px; }
ul.models .meter { height: 10px; margin: .25rem 0 0; }

table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: .5rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: .85rem; color: var(--muted); font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; }
table.requests td.time, table.requests td.model code, .st-ok, .st-bad { white-space: nowrap; }
table.requests th.num { white-space: normal; }
table.requests td.note { min-width: 10rem; }
table.requests td.note code { overflow-wrap: anywhere; }
tbody tr:focus { outline: 3px solid var(--focus); outline-offset: -3px; }
.tag { display: inline-block; font-size: .78rem; font-weight: 600; padding: 0 .4rem; border-radius: 4px; background: var(--code-bg); color: var(--muted); }
.st-ok { color: var(--ok); font-weight: 700; }
.st-bad { color: var(--bad); font-weight: 700; }
.note-bad { color: var(--bad); font-weight: 600; }
.note-warn { color: var(--warn); font-weight: 600; }
.debt { color: var(--bad); font-weight: 600; }
.table-wrap { overflow-x: auto; }
.table-wrap + .actions { margin-top: 14px; }
.empty { color: var(--muted); padding: .5rem 0; }
footer { color: var(--muted); font-size: .85rem; margin-top: 24px; }

@media (max-width: 720px) {
  main { padding: 18px 12px 40px; }
  h1 { font-size: 1.5rem; }
  .panel { padding: 14px; }
  .grid { grid-template-columns: minmax(0, 1fr); }
  .big { font-size: 1.9rem; }
  .y-labels, .plot { height: 150px; }
  dl.facts { grid-template-columns: minmax(0, 1fr); gap: 0; }
  dl.facts dt { margin-top: .45rem; }
  button { flex: 1 1 auto; }
  .keyrow button { flex: 0 0 auto; }
  /* Requests reflow into one card per request, each value labelled. */
  table.requests thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  table.requests, table.requests tbody, table.requests tr, table.requests td { display: block; width: 100%; }
  table.requests tr { border: 1px solid var(--line); border-radius: 8px; padding: 6px 10px; margin-bottom: 10px; }
  table.requests td { display: flex; justify-content: space-between; gap: 12px; border: 0; padding: .2rem 0; text-align: right; }
  table.requests td::before { content: attr(data-label); color: var(--muted); font-weight: 600; text-align: left; flex: 0 0 auto; }
  table.requests td:empty { display: none; }
}
@media (prefers-reduced-motion: no-preference) {
  .meter .fill { transition: width .3s ease-out; }
}
`;
