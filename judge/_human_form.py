# ruff: noqa: E501
"""The grading form: one self-contained HTML page (inline CSS and JS, no network).

The packet is embedded as JSON; the page renders one card per answer with a 0 / .25 / .5 / .75 /
1 / n/a choice per assertion, keeps the grades in the browser's local storage as they are given,
and "Save grades" downloads them as ``grades-<packet>.json`` for ``judge.human import``. Answers
and reference answers are rendered as users see them (tables as tables, links as links) by the
trajectory viewer's safe markdown subset (``ledgerbench_core/markdown.js``, the same file);
no HTML from a run is ever parsed, and a Content-Security-Policy lets only the page's own script
and style run.
"""

from __future__ import annotations

import base64
import hashlib

STYLE = """body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 980px; padding: 1em;
       color: #1d232a; background: #f6f7f9; }
header { position: sticky; top: 0; background: #f6f7f9; padding: .5em 0; border-bottom: 1px solid #ccd;
         display: flex; gap: 1em; align-items: center; flex-wrap: wrap; z-index: 1; }
.card { background: #fff; border: 1px solid #d8dce3; border-radius: 6px; margin: 1em 0; padding: 1em; }
.card h2 { font-size: 1.05em; margin: 0 0 .5em; }
.label { font-weight: 600; font-size: .85em; color: #556; text-transform: uppercase; margin-top: .8em; }
.answer, .reference { background: #fafbfc; border: 1px solid #e4e7ec;
                      padding: .2em .8em; border-radius: 4px; overflow-x: auto; }
.reference { background: #f3f8f3; }
table.grades { width: 100%; border-collapse: collapse; margin-top: .6em; }
table.grades td { border-top: 1px solid #eceef2; padding: .35em .3em; vertical-align: top; }
table.grades td.choices { white-space: nowrap; }
.choices label { margin-right: .5em; cursor: pointer; }
.dim { font-size: .8em; color: #667; }
.ungraded { background: #fff8e6; }
button { font-size: 1em; padding: .4em 1em; cursor: pointer; }
#status { color: #445; }
details.records { margin-top: .6em; }
details.record { margin: .3em 0 .3em 1em; }
details.record table { border-collapse: collapse; font-size: .85em; margin: .3em 0; }
details.record td, details.record th { border: 1px solid #e4e7ec; padding: 2px 6px; text-align: left; }
.source { color: #667; font-size: .85em; }
.md table { border-collapse: collapse; margin: .4em 0; }
.md th, .md td { border: 1px solid #d8dce3; padding: .2em .5em; text-align: left; }
.md th { background: #eef1f5; }
.md blockquote { margin: .4em 0; padding-left: .8em; border-left: 3px solid #d8dce3; color: #556; }
.md pre { background: #f3f4f6; padding: .5em; overflow-x: auto; }
.md li.nested { margin-left: 1.2em; }
"""

SCRIPT = r"""(function () {
  "use strict";
  var packet = JSON.parse(document.getElementById("packet-data").textContent);
  var storeKey = "ledgerbench-grades-" + packet.packet_id;
  var grades = {};
  try { grades = JSON.parse(localStorage.getItem(storeKey) || "{}") || {}; } catch (e) { grades = {}; }
  var total = 0;

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) { node.textContent = text; }
    return node;
  }

  // Answers and the reference are shown as the user sees them (tables, links, lists), by the
  // viewer's safe markdown subset: text nodes and built elements only, never parsed HTML.
  function rendered(kind, text) {
    var box = el("div", { "class": kind });
    box.appendChild(LedgerBenchMarkdown.markdown(text));
    return box;
  }

  function remember() {
    try { localStorage.setItem(storeKey, JSON.stringify(grades)); } catch (e) { /* private mode */ }
    var done = Object.keys(grades).length;
    document.getElementById("status").textContent = done + " of " + total + " graded";
    document.body.setAttribute("data-graded", String(done));
  }

  function grid(columns, rows) {
    var table = el("table", {});
    var head = el("tr", {});
    columns.forEach(function (c) { head.appendChild(el("th", {}, c)); });
    table.appendChild(head);
    rows.forEach(function (row) {
      var tr = el("tr", {});
      row.forEach(function (v) { tr.appendChild(el("td", {}, v)); });
      table.appendChild(tr);
    });
    return table;
  }
  // A carried copy of a record the answer cites (or its tools showed): opens with no server.
  function recordCopy(record) {
    var box = el("details", { "class": "record" });
    box.appendChild(el("summary", {}, record.title + (record.cited ? " \u00b7 cited" : "")));
    box.appendChild(el("div", { "class": "source" }, record.link));
    box.appendChild(el("div", { "class": "source" }, "Copy: " + record.source));
    if (record.body) { box.appendChild(el("div", { "class": "answer" }, record.body)); }
    if (record.fields.length) { box.appendChild(grid(["field", "value"], record.fields)); }
    record.sections.forEach(function (section) {
      box.appendChild(el("div", { "class": "label" }, section.title));
      if (section.rows.length) { box.appendChild(grid(section.columns, section.rows)); }
    });
    return box;
  }
  var main = document.getElementById("items");
  packet.items.forEach(function (item) {
    var card = el("section", { "class": "card", "id": item.item });
    card.appendChild(el("h2", {}, item.item + " \u00b7 " + item.task_type));
    card.appendChild(el("div", { "class": "label" }, "Question"));
    card.appendChild(el("div", {}, item.question));
    if (item.reference) {
      card.appendChild(el("div", { "class": "label" }, "Reference answer (for accuracy)"));
      card.appendChild(rendered("reference", item.reference));
    }
    card.appendChild(el("div", { "class": "label" }, "Answer"));
    card.appendChild(rendered("answer", item.answer));
    if (item.records && item.records.length) {
      var cited = item.records.filter(function (r) { return r.cited; }).length;
      var records = el("details", { "class": "records" });
      records.appendChild(el("summary", {}, "Records: " + cited + " cited by the answer, " +
        (item.records.length - cited) + " shown to the agent by its tools (copies that open offline)"));
      item.records.forEach(function (record) { records.appendChild(recordCopy(record)); });
      card.appendChild(records);
    }
    var table = el("table", { "class": "grades" });
    item.assertions.forEach(function (assertion) {
      total += 1;
      var key = item.item + "|" + assertion.id;
      var row = el("tr", { "data-key": key });
      var text = el("td", {});
      text.appendChild(el("div", { "class": "dim" }, assertion.dimension + " \u00b7 " + assertion.level));
      text.appendChild(el("div", {}, assertion.text));
      row.appendChild(text);
      var cell = el("td", { "class": "choices" });
      packet.scale.forEach(function (value) {
        var label = el("label", {});
        var input = el("input", { type: "radio", name: key, value: String(value) });
        if (grades[key] !== undefined && String(grades[key]) === String(value)) { input.checked = true; }
        input.addEventListener("change", function () {
          grades[key] = value;
          row.classList.remove("ungraded");
          remember();
        });
        label.appendChild(input);
        label.appendChild(document.createTextNode(" " + value));
        cell.appendChild(label);
      });
      row.appendChild(cell);
      if (grades[key] === undefined) { row.classList.add("ungraded"); }
      table.appendChild(row);
    });
    card.appendChild(table);
    main.appendChild(card);
  });

  var grader = document.getElementById("grader");
  grader.value = localStorage.getItem(storeKey + "-grader") || "";
  grader.addEventListener("input", function () {
    try { localStorage.setItem(storeKey + "-grader", grader.value); } catch (e) { /* ignore */ }
  });

  document.getElementById("save").addEventListener("click", function () {
    var rows = Object.keys(grades).sort().map(function (key) {
      var parts = key.split("|");
      return { item: parts[0], assertion_id: parts[1], grade: grades[key] };
    });
    var body = JSON.stringify({
      packet_id: packet.packet_id,
      grader: grader.value,
      saved_at: new Date().toISOString(),
      grades: rows
    }, null, 1);
    var link = el("a", {
      href: URL.createObjectURL(new Blob([body], { type: "application/json" })),
      download: "grades-" + packet.packet_id + ".json"
    });
    document.body.appendChild(link);
    link.click();
    link.remove();
    document.getElementById("status").textContent = rows.length + " of " + total + " graded, saved";
  });
  remember();
  document.body.setAttribute("data-ready", "1");
})();
"""

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="__CSP__">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>LedgerBench grading packet __PACKET_ID__</title>
<style>__STYLE__</style>
</head>
<body>
<header>
  <strong>Grading packet __PACKET_ID__</strong>
  <label>Your name <input id="grader" autocomplete="name"></label>
  <span id="status"></span>
  <button id="save" type="button">Save grades</button>
</header>
<p>Grade each answer against each statement: 1 = fully met, 0.75 = mostly, 0.5 = partly,
0.25 = barely, 0 = not met, n/a = the statement does not apply to this question. Use the
reference answer for accuracy. The agent that wrote each answer is hidden. Your grades are kept
in this browser as you go; "Save grades" downloads them as a file to send back.</p>
<main id="items"></main>
<script type="application/json" id="packet-data">__PACKET_JSON__</script>
<script>__SCRIPT__</script>
</body>
</html>
"""


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def form_page(packet_id: str, packet_json: str) -> str:
    """The page for one packet (``packet_id`` HTML-escaped, ``packet_json`` safe inside a
    ``<script type="application/json">``)."""
    from ledgerbench_core._assets import markdown_script

    script = markdown_script() + "\n" + SCRIPT
    csp = "; ".join(
        [
            "default-src 'none'",
            f"script-src {_hash(script)}",
            f"style-src {_hash(STYLE)}",
            "img-src data:",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )
    page = PAGE.replace("__CSP__", csp).replace("__STYLE__", STYLE).replace("__SCRIPT__", script)
    return page.replace("__PACKET_ID__", packet_id).replace("__PACKET_JSON__", packet_json)
