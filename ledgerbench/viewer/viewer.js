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
  const questionIds = INDEX.questions.map((q) => q.id);
  const questionById = new Map(INDEX.questions.map((q) => [q.id, q]));

  // ---------------------------------------------------------------- DOM helpers
  const { el, link, markdown } = LedgerBenchMarkdown;
  const fmt = (value, digits = 2) =>
    value === null || value === undefined ? "–" : Number(value).toFixed(digits);
  const seconds = (value) => (value === null || value === undefined ? "–" : `${fmt(value, 1)} s`);

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

  async function detail(question) {
    if (detailCache.has(question.id)) return detailCache.get(question.id);
    const node = document.getElementById(`lb-q-${question.n}`);
    const bytes = Uint8Array.from(atob(node.textContent.trim()), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    const value = JSON.parse(await new Response(stream).text());
    detailCache.set(question.id, value);
    return value;
  }

  // ---------------------------------------------------------------- routing
  function parseHash() {
    const hash = decodeURIComponent(location.hash.replace(/^#\/?/, ""));
    if (hash.startsWith("q/")) return { view: "question", id: hash.slice(2) };
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
    } else if (route.view === "question") {
      root.append(el("p", { class: "warn" }, `No question ${route.id} in these runs. `,
        el("a", { href: "#/" }, "Back to the index")));
    } else {
      renderIndex(route.params);
    }
    // Tests (and anyone scripting the page) wait for this attribute.
    document.body.setAttribute("data-rendered", route.view === "question" ? `q/${route.id}` : "index");
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
    const filters = Object.fromEntries(["type", "scenario", "status", "score", "judge", "run", "q"]
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
          ? run.judges.map((j, n) => [n ? ", " : "", j, " (", el("span", { class: "overall", "data-judge": j }, `Overall ${run.overall[j]}`), ")"])
          : "none"))));
    const bar = el("div", { class: "filters" },
      select("type", "task type", distinct("task_type").map((t) => [t, t]), filters.type, update("type")),
      select("scenario", "scenario", distinct("scenario").map((s) => [s, s]), filters.scenario, update("scenario")),
      select("status", "status", STATUSES.map((s) => [s, s]), filters.status, update("status")),
      select("score", "score", SCORE_FILTERS, filters.score, update("score")),
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

    function drawTable() {
      const shown = INDEX.questions.filter((q) => matches(q, filters));
      count.textContent = `${shown.length} of ${INDEX.questions.length} questions shown`;
      const head = el("tr", {}, el("th", {}, "question"), el("th", {}, "type"), el("th", {}, "scenario"),
        RUNS.map((run) => el("th", { class: "run-col" }, run.name)));
      const rows = shown.map((q) => el("tr", { "data-qid": q.id },
        el("td", {}, el("a", { href: questionHref(q.id), class: "qlink" }, q.id)),
        el("td", {}, q.task_type), el("td", {}, q.scenario || "–"),
        q.cells.map((trials) => el("td", { class: "run-col" }, trialSummary(trials, filters.judge)))));
      holder.replaceChildren(el("table", { class: "index" }, el("thead", {}, head), el("tbody", {}, rows)));
    }
    drawTable();
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
    for (const record of data.records) column.append(trialBlock(run, record, data.scores));
    return column;
  }

  function trialBlock(run, record, scores) {
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
      fact("model turns", record.turns), fact("tokens in/out", `${usage.input_tokens || 0} / ${usage.output_tokens || 0}`),
      fact("cost", record.cost_usd === null || record.cost_usd === undefined ? "–" : `$${fmt(record.cost_usd, 4)}`),
      fact("model", record.model || "–")));
    block.append(el("h5", {}, "Answer"));
    block.append(record.answer ? el("div", { class: "answer" }, markdown(record.answer)) : el("p", { class: "sub" }, "(no answer)"));
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

  function verdict(judge, score) {
    const box = el("details", { class: "verdict", open: true },
      el("summary", {}, `judge ${judge}, answer mean: `, el("span", { class: `score ${scoreClass(score.overall ?? null)}` },
        score.status === "scored" ? (score.overall === null ? "unscored" : fmt(score.overall)) : score.status)));
    const table = el("table", { class: "dims" });
    for (const [dimension, result] of Object.entries(score.dimensions || {})) {
      table.append(el("tr", { class: "dim" }, el("th", {}, dimension),
        el("td", { class: scoreClass(result.score ?? null) }, result.score === null || result.score === undefined ? result.status : fmt(result.score)),
        el("td", {}, result.error || "")));
      for (const assertion of result.assertions || []) {
        table.append(el("tr", { class: "assertion" }, el("td", { class: "aid" }, assertion.assertion_id),
          el("td", {}, assertion.score === null ? "n/a" : fmt(assertion.score)),
          el("td", { class: "reason" }, assertion.reason || "", assertion.decided_by ? el("span", { class: "sub" }, ` (${assertion.decided_by})`) : null)));
      }
    }
    box.append(table);
    return box;
  }

  function toolCall(call, index) {
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
      el("pre", { class: "output" }, call.output || ""),
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
      box.append(message(m.role, body, m.started_s));
    }
    return box;
  }
  function message(role, body, started) {
    return el("div", { class: `msg ${role}` },
      el("div", { class: "role" }, role, started !== null && started !== undefined ? el("span", { class: "sub" }, ` +${fmt(started, 1)} s`) : null),
      body);
  }

  function events(record) {
    const rows = record.events.map((e) => e.type === "model"
      ? el("tr", {}, el("td", {}, "model"), el("td", {}, fmt(e.started_s, 2)), el("td", {}, fmt(e.duration_s, 2)),
        el("td", {}, `${e.usage.input_tokens}/${e.usage.output_tokens}`), el("td", {}, e.retries), el("td", {}, e.error || ""), el("td", {}, e.request_id || ""))
      : el("tr", {}, el("td", {}, `tool #${e.tool_call_index}`), el("td", {}, fmt(e.started_s, 2)), el("td", {}, fmt(e.duration_s, 2)),
        el("td", {}, ""), el("td", {}, ""), el("td", {}, e.error ? "error" : ""), el("td", {}, "")));
    return el("details", { class: "events" }, el("summary", {}, `Events (${record.events.length})`),
      el("table", {}, el("tr", {}, ["event", "start s", "duration s", "tokens in/out", "retries", "error", "request id"].map((h) => el("th", {}, h))), rows));
  }

  render();
})();
