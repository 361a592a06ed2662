// LedgerBench trajectory viewer. Everything that came from a run (answers, tool outputs, reasons,
// questions) reaches the page through textContent or DOM nodes built here: never innerHTML.
// The page's one script is markdown.js (the safe markdown subset, shared with the human grading
// packet) followed by this file.
(() => {
  "use strict";
  const INDEX = JSON.parse(document.getElementById("lb-index").textContent);
  const RUNS = INDEX.runs;
  const STATUSES = ["ok", "timeout", "max_turns", "error", "infra", "missing"];
  const root = document.getElementById("app");
  const detailCache = new Map();
  let ITEMS = null; // carried copies of cited and read records: id -> item
  let itemByLink = new Map();
  let linkAliases = {}; // links of the trial being drawn -> id of their carried copy
  const questionIds = INDEX.questions.map((q) => q.id);
  const questionById = new Map(INDEX.questions.map((q) => [q.id, q]));

  // ---------------------------------------------------------------- DOM helpers
  const { el, link, markdown } = LedgerBenchMarkdown;
  const fmt = (value, digits = 2) =>
    value === null || value === undefined ? "–" : Number(value).toFixed(digits);
  const seconds = (value) => (value === null || value === undefined ? "–" : `${fmt(value, 1)} s`);

  const itemHref = (id) => `#/item/${encodeURIComponent(id)}`;
  LedgerBenchMarkdown.onCarriedCopy((url) => {
    const carried = linkAliases[url];
    return carried ? { href: itemHref(carried), title: `${url} (a copy carried in this page: opens offline)` } : null;
  });

  // ---------------------------------------------------------------- data
  function statusOf(cell) {
    if (!cell) return "missing";
    return cell.i ? "infra" : cell.s;
  }
  function badge(cell) {
    const status = statusOf(cell);
    const label = status === "missing" ? "no record" : cell.r || status;
    return el("span", { class: `badge st-${status}`, title: cell && cell.d ? cell.d : null }, label);
  }
  function meanScore(trials, judge) {
    const values = trials.map((t) => (t.sc || {})[judge]).filter((v) => v !== null && v !== undefined);
    return values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
  }

  async function unpack(id) {
    const node = document.getElementById(id);
    const bytes = Uint8Array.from(atob(node.textContent.trim()), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }
  async function detail(question) {
    if (detailCache.has(question.id)) return detailCache.get(question.id);
    const value = await unpack(`lb-q-${question.n}`);
    detailCache.set(question.id, value);
    return value;
  }
  async function loadItems() {
    if (ITEMS === null) {
      ITEMS = await unpack("lb-items");
      itemByLink = new Map(Object.entries(ITEMS).map(([id, item]) => [item.link, id]));
    }
    return ITEMS;
  }

  // ---------------------------------------------------------------- routing
  function parseHash() {
    const hash = decodeURIComponent(location.hash.replace(/^#\/?/, ""));
    if (hash.startsWith("q/")) return { view: "question", id: hash.slice(2) };
    if (hash.startsWith("item/")) return { view: "item", id: hash.slice(5) };
    const params = new URLSearchParams(location.hash.split("?")[1] || "");
    return { view: "index", params };
  }
  function filterHash(filters) {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(filters)) if (value) params.set(key, value);
    const text = params.toString();
    return `#/${text ? `?${text}` : ""}`;
  }
  const questionHref = (id) => `#/q/${encodeURIComponent(id)}`;

  async function render() {
    const route = parseHash();
    document.body.removeAttribute("data-rendered");
    root.replaceChildren();
    window.scrollTo(0, 0);
    if (route.view === "question" && questionById.has(route.id)) {
      await renderQuestion(questionById.get(route.id));
    } else if (route.view === "item") {
      await renderItem(route.id);
    } else if (route.view === "question") {
      root.append(el("p", { class: "warn" }, `No question ${route.id} in these runs. `,
        el("a", { href: "#/" }, "Back to the index")));
    } else {
      renderIndex(route.params);
    }
    // Tests (and anyone scripting the page) wait for this attribute.
    const rendered = { question: `q/${route.id}`, item: `item/${route.id}` }[route.view] || "index";
    document.body.setAttribute("data-rendered", rendered);
  }
  window.addEventListener("hashchange", render);

  // ---------------------------------------------------------------- index
  function distinct(key) {
    return [...new Set(INDEX.questions.map((q) => q[key]).filter(Boolean))].sort();
  }
  function select(name, label, options, value, onchange) {
    const box = el("select", { name, "aria-label": label, onchange });
    box.append(el("option", { value: "" }, `${label}: all`));
    for (const [optionValue, text] of options) {
      box.append(el("option", { value: optionValue, selected: optionValue === value }, text));
    }
    return el("label", {}, box);
  }
  const DISAGREEMENTS = [
    ["any", "runs or judges differ"],
    ["runs", "runs differ"],
    ["judges", "judges differ"],
  ];
  const STEP = 0.25; // one step of the grading scale: a difference worth a look
  function runsDiffer(question, judge) {
    const scores = question.cells.map((trials) => meanScore(trials || [], judge)).filter((s) => s !== null);
    if (scores.length > 1 && Math.max(...scores) - Math.min(...scores) >= STEP) return true;
    const statuses = new Set(question.cells.map((trials) => statusOf((trials || [])[0])));
    return statuses.size > 1;
  }
  function judgesDiffer(question) {
    return question.cells.some((trials) => {
      const scores = INDEX.judges.map((j) => meanScore(trials || [], j)).filter((s) => s !== null);
      return scores.length > 1 && Math.max(...scores) - Math.min(...scores) >= STEP;
    });
  }
  const SCORE_FILTERS = [
    ["lt1", "below 1 in some run"],
    ["lt05", "below 0.5 in some run"],
    ["perfect", "1 in every run"],
    ["differ", "runs differ by ≥ 0.25"],
    ["unscored", "unscored in some run"],
  ];

  function matches(question, filters) {
    if (filters.type && question.task_type !== filters.type) return false;
    if (filters.scenario && question.scenario !== filters.scenario) return false;
    if (filters.run !== undefined && filters.run !== "" && !question.cells[Number(filters.run)]) {
      return false;
    }
    const runs = filters.run ? [Number(filters.run)] : RUNS.map((_, n) => n);
    if (filters.status) {
      const hit = runs.some((n) => {
        const trials = question.cells[n] || [];
        return trials.length ? trials.some((t) => statusOf(t) === filters.status) : filters.status === "missing";
      });
      if (!hit) return false;
    }
    if (filters.q) {
      const needle = filters.q.toLowerCase();
      if (!question.id.toLowerCase().includes(needle) && !(question.query || "").toLowerCase().includes(needle)) {
        return false;
      }
    }
    if (filters.dis) {
      const differ = { runs: () => runsDiffer(question, filters.judge), judges: () => judgesDiffer(question),
        any: () => runsDiffer(question, filters.judge) || judgesDiffer(question) }[filters.dis];
      if (differ && !differ()) return false;
    }
    if (filters.score) {
      const scores = runs.map((n) => meanScore(question.cells[n] || [], filters.judge));
      const known = scores.filter((s) => s !== null);
      const test = {
        lt1: () => known.some((s) => s < 1),
        lt05: () => known.some((s) => s < 0.5),
        perfect: () => known.length === scores.length && known.every((s) => s >= 1),
        differ: () => known.length > 1 && Math.max(...known) - Math.min(...known) >= 0.25,
        unscored: () => known.length < scores.length,
      }[filters.score];
      if (test && !test()) return false;
    }
    return true;
  }

  function renderIndex(params) {
    const filters = Object.fromEntries(["type", "scenario", "status", "score", "dis", "judge", "run", "q", "sort", "desc"]
      .map((key) => [key, params.get(key) || ""]));
    if (!filters.judge) filters.judge = INDEX.judges[0] || "";
    const update = (key) => (event) => {
      filters[key] = event.target.value;
      history.replaceState(null, "", filterHash({ ...filters, judge: filters.judge === INDEX.judges[0] ? "" : filters.judge }));
      drawTable();
    };
    root.append(el("h1", {}, INDEX.title));
    root.append(el("p", { class: "sub" },
      `${INDEX.questions.length} questions × ${RUNS.length} run${RUNS.length === 1 ? "" : "s"}; built ${INDEX.generated_at}.`));
    root.append(el("ul", { class: "runs" }, RUNS.map((run) =>
      el("li", {}, el("strong", {}, run.name), ` — ${run.harness}${run.model ? ` / ${run.model}` : ""}, `,
        `${run.records} records, judges: `,
        run.judges.length
          ? run.judges.map((j, n) => [n ? ", " : "", j, " (", el("span", { class: "overall", "data-judge": j }, `Overall ${run.overall[j]}`),
            run.judged && run.judged[j] ? el("span", { class: "judged" }, `, ${run.judged[j]}`) : "", ")"])
          : "none"))));
    const bar = el("div", { class: "filters" },
      select("type", "task type", distinct("task_type").map((t) => [t, t]), filters.type, update("type")),
      select("scenario", "scenario", distinct("scenario").map((s) => [s, s]), filters.scenario, update("scenario")),
      select("status", "status", STATUSES.map((s) => [s, s]), filters.status, update("status")),
      select("score", "score", SCORE_FILTERS, filters.score, update("score")),
      select("dis", "disagreements", DISAGREEMENTS, filters.dis, update("dis")),
      RUNS.length > 1 ? select("run", "in run", RUNS.map((r, n) => [String(n), r.name]), filters.run, update("run")) : null,
      INDEX.judges.length > 1
        ? el("label", {}, el("select", { name: "judge", "aria-label": "judge", onchange: update("judge") },
          INDEX.judges.map((j) => el("option", { value: j, selected: j === filters.judge }, `judge: ${j}`))))
        : null,
      el("input", { type: "search", name: "q", placeholder: "id or text", value: filters.q, oninput: update("q") }));
    root.append(bar);
    const count = el("p", { class: "count" });
    const holder = el("div", { class: "table-wrap" });
    root.append(count, holder);

    const setHash = () => history.replaceState(null, "", filterHash({ ...filters, judge: filters.judge === INDEX.judges[0] ? "" : filters.judge }));
    function sortBy(column) {
      filters.desc = filters.sort === column && !filters.desc ? "1" : "";
      filters.sort = column;
      setHash();
      drawTable();
    }
    function header(label, column, cls) {
      const mark = filters.sort === column ? (filters.desc ? " ▼" : " ▲") : "";
      return el("th", { class: cls, "data-sort": column, title: "sort by this column", onclick: () => sortBy(column) }, `${label}${mark}`);
    }
    function drawTable() {
      const shown = sortRows(INDEX.questions.filter((q) => matches(q, filters)), filters);
      count.textContent = `${shown.length} of ${INDEX.questions.length} questions shown`;
      const head = el("tr", {}, header("question", "id"), header("text", "text", "qtext-col"), header("type", "type"),
        header("scenario", "scenario"), RUNS.map((run, n) => header(run.name, `r${n}`, "run-col")));
      const summary = el("tr", { class: "summary-row" }, el("td", { colspan: 4 }, "per run"),
        RUNS.map((run) => el("td", { class: "run-col" }, runSummary(run, filters.judge))));
      const rows = shown.map((q) => el("tr", { "data-qid": q.id },
        el("td", {}, el("a", { href: questionHref(q.id), class: "qlink" }, q.id)),
        el("td", { class: "qtext" }, q.query || "–"),
        el("td", {}, q.task_type), el("td", {}, q.scenario || "–"),
        q.cells.map((trials) => el("td", { class: "run-col" }, trialSummary(trials, filters.judge)))));
      holder.replaceChildren(el("table", { class: "index" }, el("thead", {}, head, summary), el("tbody", {}, rows)));
    }
    drawTable();
  }

  function sortRows(questions, filters) {
    if (!filters.sort) return questions;
    const keyOf = (q) => {
      const column = filters.sort;
      if (column === "id") return q.id;
      if (column === "text") return (q.query || "").toLowerCase();
      if (column === "type") return q.task_type || "";
      if (column === "scenario") return q.scenario || "";
      const trials = q.cells[Number(column.slice(1))] || [];
      const score = meanScore(trials, filters.judge);
      return score === null ? -1 : score; // unscored sorts below 0
    };
    const sign = filters.desc ? -1 : 1;
    return [...questions].sort((a, b) => {
      const x = keyOf(a), y = keyOf(b);
      return (x < y ? -1 : x > y ? 1 : a.n - b.n) * sign;
    });
  }
  function runSummary(run, judge) {
    const s = run.summary;
    const overall = s.overall[judge];
    return el("div", { class: "cell run-summary" },
      el("span", { class: `num score ${scoreClass(overall ?? null)}`, title: `Overall (judge ${judge || "none"})` },
        overall === null || overall === undefined ? "unscored" : `Overall ${fmt(overall, 3)}`),
      s.judged && s.judged[judge] ? el("span", { class: "judged" }, s.judged[judge]) : "",
      el("span", { class: "num" }, `${s.errors} errors`),
      el("span", { class: "num" }, `${s.timeouts} timeouts`),
      el("span", { class: "num" }, s.cost_usd === null ? "cost –" : `$${fmt(s.cost_usd, 2)}`));
  }

  function trialSummary(trials, judge) {
    if (!trials || !trials.length) return badge(null);
    const score = meanScore(trials, judge);
    const first = trials[0];
    return el("div", { class: "cell" },
      badge(first),
      trials.length > 1 ? el("span", { class: "trials" }, `×${trials.length}`) : null,
      el("span", { class: "num" }, seconds(first.l)),
      el("span", { class: "num", title: "tool calls" }, `${first.n} tools`),
      el("span", { class: `num score ${scoreClass(score)}`, title: "answer mean" }, score === null ? "unscored" : fmt(score)));
  }
  const scoreClass = (s) => (s === null ? "s-none" : s >= 0.999 ? "s-good" : s >= 0.5 ? "s-mid" : "s-bad");

  // ---------------------------------------------------------------- question page
  async function renderQuestion(question) {
    const position = questionIds.indexOf(question.id);
    const nav = el("nav", { class: "qnav" },
      el("a", { href: "#/" }, "← index"),
      position > 0 ? el("a", { href: questionHref(questionIds[position - 1]) }, "‹ previous") : null,
      position < questionIds.length - 1 ? el("a", { href: questionHref(questionIds[position + 1]) }, "next ›") : null);
    root.append(nav, el("h1", { class: "qid" }, question.id));
    const loading = el("p", { class: "sub" }, "loading…");
    root.append(loading);
    const data = await detail(question);
    await loadItems();
    loading.remove();
    const q = data.question;
    root.append(el("p", { class: "sub" },
      [q.task_type, q.segment, q.scenario, q.legal_entity, q.as_of && `as of ${q.as_of}`].filter(Boolean).join(" · ")));
    root.append(el("section", { class: "question" }, el("h2", {}, "Question"),
      el("p", { class: "query", id: "question-text" }, q.query || "(question text unknown)")));
    const reference = el("section", { class: "reference" }, el("h2", {}, "Reference answer"));
    if (q.ground_truth) reference.append(markdown(q.ground_truth));
    else reference.append(el("p", { class: "sub" }, q.known ? "No reference answer (graded by rubric)." : "Dataset not available: no reference answer."));
    if (q.expected && q.expected.length) {
      reference.append(el("details", {}, el("summary", {}, `Expected facts (${q.expected.length})`),
        el("ul", {}, q.expected.map((f) => el("li", {}, el("code", {}, f.kind), ` ${f.field}: `, JSON.stringify(f.value))))));
    }
    root.append(reference);
    const columns = el("div", { class: `columns n${Math.min(data.runs.length, 4)}` });
    data.runs.forEach((run, n) => columns.append(runColumn(RUNS[n], run)));
    root.append(el("h2", {}, "Runs"), columns);
    document.title = `${question.id} — LedgerBench viewer`;
  }

  function runColumn(run, data) {
    const column = el("section", { class: "run" }, el("h3", {}, run.name),
      el("p", { class: "sub" }, `${run.harness}${run.model ? ` / ${run.model}` : ""}`));
    if (!data.records.length) {
      column.append(el("p", { class: "sub" }, "This run has no record for the question."));
      return column;
    }
    for (const record of data.records) {
      const linked = (data.linked || {})[String(record.trial)] || null;
      linkAliases = linked ? linked.aliases : {};
      try {
        column.append(trialBlock(run, record, data.scores, linked));
      } finally {
        linkAliases = {};
      }
    }
    return column;
  }

  function trialBlock(run, record, scores, linked) {
    const block = el("div", { class: "trial" });
    const term = record.termination || {};
    const cell = { s: record.status, r: term.reason, i: term.infrastructure, d: term.detail };
    block.append(el("h4", {}, `trial ${record.trial} `, badge(cell)));
    if (term.detail) block.append(el("p", { class: "detail" }, term.detail));
    if (record.error) block.append(el("p", { class: "error" }, `${record.error.class}: ${record.error.message}`));
    const usage = record.usage || {};
    block.append(el("dl", { class: "facts" },
      fact("latency", seconds(record.latency_s)), fact("working time", seconds(record.working_time_s)),
      fact("budget", seconds(record.timeout_s)), fact("tool calls", (record.tool_calls || []).length),
      fact("model turns", record.turns), fact("tokens in/out", record.usage ? `${usage.input_tokens || 0} / ${usage.output_tokens || 0}` : "unknown"),
      fact("cost", record.cost_usd === null || record.cost_usd === undefined ? "–" : `$${fmt(record.cost_usd, 4)}`),
      fact("model", record.model || "–")));
    block.append(el("h5", {}, "Answer"));
    block.append(record.answer ? el("div", { class: "answer" }, markdown(record.answer)) : el("p", { class: "sub" }, "(no answer)"));
    if (linked && (linked.cited.length || linked.read.length)) block.append(carriedList(linked));
    for (const judge of Object.keys(scores).sort()) {
      const score = scores[judge].find((s) => s.trial === record.trial);
      if (score) block.append(verdict(judge, score));
    }
    block.append(conversation(record, run.system_prompt));
    if ((record.events || []).length) block.append(events(record));
    if ((record.sources || []).length) {
      block.append(el("details", {}, el("summary", {}, `Sources (${record.sources.length})`),
        el("ul", {}, record.sources.map((s) => el("li", {}, link(s.url, [s.title || s.url], s.url))))));
    }
    if ((record.previous_attempts || []).length) {
      block.append(el("details", {}, el("summary", {}, `Earlier attempts (${record.previous_attempts.length})`),
        el("ul", {}, record.previous_attempts.map((a) =>
          el("li", {}, `${a.termination.reason}: ${a.termination.detail || ""} (${seconds(a.latency_s)})`)))));
    }
    return block;
  }
  const fact = (name, value) => [el("dt", {}, name), el("dd", {}, String(value))];

  // A check no judge decided: the rules judge leaves it to an LLM judge.
  const undecided = (assertion) => assertion.score === null && !assertion.decided_by;
  function assertionRow(assertion) {
    return el("tr", { class: "assertion" }, el("td", { class: "aid" }, assertion.assertion_id),
      el("td", {}, assertion.score === null ? "n/a" : fmt(assertion.score)),
      el("td", { class: "reason" }, assertion.reason || "", assertion.decided_by ? el("span", { class: "sub" }, ` (${assertion.decided_by})`) : null));
  }
  function verdict(judge, score) {
    const box = el("details", { class: "verdict", open: true },
      el("summary", {}, `judge ${judge}, answer mean: `, el("span", { class: `score ${scoreClass(score.overall ?? null)}` },
        score.status === "scored" ? (score.overall === null ? "unscored" : fmt(score.overall)) : score.status)));
    const table = el("table", { class: "dims" });
    const folded = el("table", { class: "dims" });
    const foldedDimensions = [];
    let foldedChecks = 0;
    for (const [dimension, result] of Object.entries(score.dimensions || {})) {
      const checks = result.assertions || [];
      const llmOnly = result.status === "needs_llm" && checks.every(undecided);
      const target = llmOnly ? folded : table;
      if (llmOnly) foldedDimensions.push(dimension);
      target.append(el("tr", { class: "dim" }, el("th", {}, dimension),
        el("td", { class: scoreClass(result.score ?? null) }, result.score === null || result.score === undefined ? result.status : fmt(result.score)),
        el("td", {}, result.error || "")));
      for (const assertion of checks) {
        if (!llmOnly && undecided(assertion)) {
          folded.append(el("tr", { class: "dim" }, el("th", {}, dimension), el("td", {}, ""), el("td", {}, "")), assertionRow(assertion));
          foldedChecks += 1;
        } else {
          target.append(assertionRow(assertion));
        }
      }
    }
    box.append(table);
    if (foldedDimensions.length || foldedChecks) {
      const parts = [
        foldedDimensions.length ? `${foldedDimensions.length} dimension${foldedDimensions.length === 1 ? "" : "s"} (${foldedDimensions.join(", ")})` : null,
        foldedChecks ? `${foldedChecks} more check${foldedChecks === 1 ? "" : "s"}` : null,
      ].filter(Boolean).join(" and ");
      box.append(el("details", { class: "llm-only" }, el("summary", {}, `${parts}: need an LLM judge, not scored by ${judge}`), folded));
    }
    return box;
  }

  function parsedOutput(call) {
    if (call.view_clipped || typeof call.output !== "string") return null;
    try {
      const value = JSON.parse(call.output);
      return value && typeof value === "object" ? value : null;
    } catch {
      return null;
    }
  }
  // A document's title, source and date, from the search result or fetch that listed it.
  function documentFacts(parsed) {
    const facts = new Map();
    if (!parsed) return facts;
    for (const entry of [parsed, ...(Array.isArray(parsed.results) ? parsed.results : [])]) {
      if (entry && typeof entry.url === "string" && entry.title) facts.set(entry.url, entry);
    }
    return facts;
  }
  // The research-world documents a search returned or a fetch read (ToolCall.documents), with
  // their titles and dates; a document with a carried copy (cited or fetched) opens offline, the
  // others are named, not linked (their address resolves nowhere once the world is gone).
  function documentList(call, parsed) {
    const docs = call.documents || [];
    if (!docs.length) return null;
    const fetched = String(call.name || "").split("__").pop() === "fetch";
    const label = fetched ? "Document read:" : `Documents returned (${docs.length}, best first):`;
    const facts = documentFacts(parsed);
    return el("div", { class: "documents" }, el("p", { class: "sub" }, label),
      el("ol", {}, docs.map((url) => {
        const fact = facts.get(url);
        const title = fact ? fact.title : url;
        const when = fact ? [fact.source, fact.published_at].filter(Boolean).join(", ") : "";
        const name = linkAliases[url] ? link(url, [title], title) : el("span", { class: "doc-title", title: url }, title);
        return el("li", {}, name, when ? el("span", { class: "sub" }, ` — ${when}`) : null,
          linkAliases[url] ? null : el("span", { class: "sub" }, " (not carried: only cited or fetched documents are)"));
      })));
  }
  const cellText = (value) =>
    value === null || value === undefined ? "–" : typeof value === "object" ? JSON.stringify(value) : String(value);
  function keyValues(object) {
    return table(["field", "value"], Object.entries(object).map(([key, value]) => [key, cellText(value)]));
  }
  function rowsTable(rows) {
    const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))];
    return table(columns, rows.map((row) => columns.map((column) => cellText(row[column]))));
  }
  const ROW_LISTS = ["items", "rows", "results", "candidates", "matches"];
  // What a person reads of a tool's output: a document as markdown, a record as a key-value
  // table, a list of records as a table (the rest of the page's fields as key-values).
  function renderedOutput(call, parsed) {
    if (!parsed || Array.isArray(parsed)) return null;
    if (typeof parsed.content === "string") {
      const byline = [parsed.source, parsed.published_at].filter(Boolean).join(", ");
      return el("div", { class: "rendered-output" },
        parsed.title ? el("p", {}, el("strong", {}, parsed.title), byline ? el("span", { class: "sub" }, ` — ${byline}`) : null) : null,
        el("div", { class: "answer" }, markdown(parsed.content)));
    }
    const listKey = ROW_LISTS.find((key) => Array.isArray(parsed[key]) && parsed[key].every((row) => row && typeof row === "object"));
    const rest = Object.fromEntries(Object.entries(parsed).filter(([key]) => key !== listKey));
    const entries = Object.entries(rest);
    const single = entries.length === 1 && entries[0][1] && typeof entries[0][1] === "object" && !Array.isArray(entries[0][1]);
    return el("div", { class: "rendered-output" },
      entries.length ? keyValues(single ? entries[0][1] : rest) : null,
      listKey ? (parsed[listKey].length ? rowsTable(parsed[listKey]) : el("p", { class: "sub" }, `${listKey}: none`)) : null);
  }

  function toolCall(call, index) {
    const parsed = parsedOutput(call);
    const rendered = renderedOutput(call, parsed);
    const args = JSON.stringify(call.arguments || {});
    const meta = [
      call.is_error ? "error" : null, call.cancelled ? "cut off" : null,
      call.duration_s !== null && call.duration_s !== undefined ? `${fmt(call.duration_s, 2)} s` : null,
      `${call.output_size} chars${call.truncated ? " (truncated)" : ""}`,
    ].filter(Boolean).join(", ");
    return el("details", { class: `tool${call.is_error ? " tool-error" : ""}` },
      el("summary", {}, el("code", {}, `#${index} ${call.name}`), ` ${args.length > 120 ? `${args.slice(0, 117)}…` : args} `,
        el("span", { class: "sub" }, meta)),
      el("pre", { class: "args" }, JSON.stringify(call.arguments || {}, null, 2)),
      documentList(call, parsed),
      rendered,
      rendered
        ? el("details", { class: "raw-output" }, el("summary", {}, "raw output (JSON)"), el("pre", { class: "output" }, call.output || ""))
        : el("pre", { class: "output" }, call.output || ""),
      call.view_clipped ? el("p", { class: "sub" }, `Shown: the first ${call.output.length} characters; the record holds ${call.record_chars}.`) : null,
      el("p", { class: "sub hash" }, `sha256 ${call.output_sha256}`));
  }

  function conversation(record, systemPrompt) {
    const calls = record.tool_calls || [];
    const box = el("details", { class: "conversation", open: true },
      el("summary", {}, `Conversation (${(record.messages || []).length || calls.length} turns)`));
    if (systemPrompt) {
      box.append(el("details", { class: "msg system" }, el("summary", {}, "system prompt"), el("pre", {}, systemPrompt)));
    }
    const messages = record.messages || [];
    if (!messages.length) {
      // Version-1 records have no transcript: the question and the tool calls are all there is.
      if (record.input) box.append(message("user", el("p", {}, record.input)));
      calls.forEach((call, n) => box.append(toolCall(call, n)));
      return box;
    }
    for (const m of messages) {
      if (m.role === "tool") {
        const call = calls[m.tool_call_index];
        if (call) box.append(toolCall(call, m.tool_call_index));
        continue;
      }
      const body = [];
      if (m.reasoning) body.push(el("details", { class: "reasoning" }, el("summary", {}, "reasoning"), el("pre", {}, m.reasoning)));
      if (m.content) body.push(m.role === "assistant" ? markdown(m.content) : el("p", {}, m.content));
      if (m.role === "assistant" && m.tool_calls && m.tool_calls.length) {
        body.push(el("p", { class: "sub" }, `calls ${m.tool_calls.map((t) => `#${t.index} ${(calls[t.index] || {}).name || "?"}`).join(", ")}`));
      }
      const simulated = record.conversation && m.role === "user";
      box.append(message(simulated ? "user (simulated)" : m.role, body, m.started_s, m.role));
    }
    if (record.conversation) box.append(simulatedUser(record));
    return box;
  }
  // A conversation with a simulated user: who played it, why it ended, and the reviewer's tags.
  function simulatedUser(record) {
    const c = record.conversation;
    const by = (t) => (t.by && t.by !== "rules" ? `, by ${t.by}` : "");
    const tags = (c.review || []).map((t) => `${t.severity} ${t.rule} (turn ${t.turn}${by(t)}): ${t.detail}`);
    const verdict = c.review_error ? `not reviewed: ${c.review_error}` : tags.length ? tags.join("; ") : "no simulator error";
    return el("div", { class: "msg system" },
      el("p", { class: "sub" }, `Simulated user: ${c.user} (${c.user_version}); ${c.kind} scenario; ended: ${record.termination.reason}; ` +
        `agent time ${fmt(c.agent_time_s, 2)} s, user time ${fmt(c.user_time_s, 3)} s (not in the budget)`),
      el("p", { class: "sub" }, `Reviewer (${c.reviewer}): ${verdict}`));
  }
  function message(role, body, started, kind) {
    return el("div", { class: `msg ${kind || role}` },
      el("div", { class: "role" }, role, started !== null && started !== undefined ? el("span", { class: "sub" }, ` +${fmt(started, 1)} s`) : null),
      body);
  }

  function events(record) {
    const rows = record.events.map((e) => e.type === "model"
      ? el("tr", {}, el("td", {}, "model"), el("td", {}, fmt(e.started_s, 2)), el("td", {}, fmt(e.duration_s, 2)),
        el("td", {}, e.usage ? `${e.usage.input_tokens}/${e.usage.output_tokens}` : "unknown"), el("td", {}, e.retries), el("td", {}, e.error || ""), el("td", {}, e.request_id || ""))
      : el("tr", {}, el("td", {}, `tool #${e.tool_call_index}`), el("td", {}, fmt(e.started_s, 2)), el("td", {}, fmt(e.duration_s, 2)),
        el("td", {}, ""), el("td", {}, ""), el("td", {}, e.error ? "error" : ""), el("td", {}, "")));
    return el("details", { class: "events" }, el("summary", {}, `Events (${record.events.length})`),
      el("table", {}, el("tr", {}, ["event", "start s", "duration s", "tokens in/out", "retries", "error", "request id"].map((h) => el("th", {}, h))), rows));
  }

  // ---------------------------------------------------------------- carried copies
  function itemLink(id) {
    const item = ITEMS[id];
    return el("a", { href: itemHref(id), class: "carried" }, item ? item.title : id);
  }
  // One list: each record or document marked "cited" (by the answer), "read" (shown to the agent
  // by its tools, or fetched) or "cited and read".
  function carriedList(linked) {
    const cited = new Set(linked.cited), read = new Set([...linked.read, ...(linked.cited_read || [])]);
    const ids = [...new Set([...linked.cited, ...linked.read])];
    const mark = (id) => (cited.has(id) && read.has(id) ? "cited and read" : cited.has(id) ? "cited" : "read");
    const count = (text) => ids.filter((id) => mark(id) === text).length;
    const tally = ["cited and read", "cited", "read"].map((text) => [count(text), text]).filter(([n]) => n)
      .map(([n, text]) => `${n} ${text}`).join(", ");
    const more = linked.not_carried ? ` (${linked.not_carried} more not carried)` : "";
    return el("details", { class: "carried-list" },
      el("summary", {}, `Records and documents: ${tally}${more}; copies open offline`),
      el("ul", {}, ids.map((id) => el("li", { "data-mark": mark(id) }, el("span", { class: `mark mark-${mark(id).replace(/ /g, "-")}` }, mark(id)), " ", itemLink(id)))));
  }
  function table(columns, rows) {
    return el("div", { class: "table-wrap" }, el("table", { class: "md-table item-table" },
      el("thead", {}, el("tr", {}, columns.map((c) => el("th", {}, c)))),
      el("tbody", {}, rows.map((row) => el("tr", {}, row.map((v) => el("td", {}, v)))))));
  }
  async function renderItem(id) {
    await loadItems();
    const item = ITEMS[id];
    root.append(el("nav", { class: "qnav" }, el("a", { href: "#/", onclick: (e) => {
      if (history.length > 1) { e.preventDefault(); history.back(); }
    } }, "← back")));
    if (!item) {
      root.append(el("p", { class: "warn" }, `No carried copy ${id} in this page.`));
      return;
    }
    root.append(el("h1", { class: "item-title" }, item.title));
    root.append(el("p", { class: "sub" }, "Link: ", el("code", {}, item.link)));
    root.append(el("p", { class: "sub item-source" }, `Copy: ${item.source}`));
    if (item.body) root.append(el("div", { class: "answer" }, markdown(item.body)));
    if (item.fields.length) root.append(el("section", { class: "item-fields" }, table(["field", "value"], item.fields)));
    for (const section of item.sections) {
      root.append(el("h2", {}, section.title));
      root.append(section.rows.length ? table(section.columns, section.rows) : el("p", { class: "sub" }, "none"));
    }
    if (item.related.length) {
      root.append(el("h2", {}, "Related"));
      root.append(el("ul", {}, item.related.map((r) => {
        const carried = itemByLink.get(r.link);
        return el("li", {}, carried ? el("a", { href: itemHref(carried), class: "carried" }, r.label) : r.label);
      })));
    }
    document.title = `${item.title} — LedgerBench viewer`;
  }

  render();
})();
