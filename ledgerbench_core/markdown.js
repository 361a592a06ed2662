// The safe markdown subset LedgerBench shows answers in: the trajectory viewer and the human
// grading packet (judge/_human_form.py) both render with it, so graders see what users see.
// Text from a run only ever becomes text nodes and elements built here, never parsed HTML: tables,
// lists, headings, quotes, code, emphasis, and links whose target is http(s) or mailto (anything
// else, javascript: included, stays text).
const LedgerBenchMarkdown = (() => {
  "use strict";
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) { // children may nest arrays (a list of parts per item)
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  function safeUrl(url) {
    // Only web and mail links; anything else (javascript:, data:, vbscript:) stays text.
    return /^(https?:\/\/|mailto:)/i.test(url) ? url : null;
  }

  // ---------------------------------------------------------------- markdown (a safe subset)
  function inline(text) {
    const out = [];
    const pattern =
      /(`+)([\s\S]*?)\1|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|\[([^\]]+)\]\(([^)\s]+)\)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/g;
    let last = 0;
    for (const m of text.matchAll(pattern)) {
      if (m.index > last) out.push(text.slice(last, m.index));
      if (m[1]) out.push(el("code", { text: m[2] }));
      else if (m[3] || m[4]) out.push(el("strong", {}, inline(m[3] || m[4])));
      else if (m[5]) out.push(el("em", {}, inline(m[5])));
      else if (m[6]) out.push(link(m[7], inline(m[6]), m[0]));
      else if (m[8]) out.push(link(m[8], [m[8]], m[8]));
      last = m.index + m[0].length;
    }
    if (last < text.length) out.push(text.slice(last));
    return out;
  }
  // A page that carries copies of linked records and documents (the viewer) names them here:
  // url -> {href, title} of the copy in the page, or null (the link then goes to the web).
  let carriedCopy = () => null;
  function link(url, children, raw) {
    const copy = carriedCopy(url);
    if (copy) return el("a", { href: copy.href, class: "carried", title: copy.title }, children);
    const href = safeUrl(url);
    if (!href) return raw;
    return el("a", { href, target: "_blank", rel: "noopener noreferrer nofollow" }, children);
  }
  const isTableRow = (line) => /^\s*\|.*\|\s*$/.test(line);
  const isTableRule = (line) => /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/.test(line);
  const cells = (line) =>
    line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
  const listItem = /^(\s*)([-*+]|\d{1,3}[.)])\s+(.*)$/;

  function markdown(source) {
    const box = el("div", { class: "md" });
    const lines = String(source || "").replace(/\r\n?/g, "\n").split("\n");
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      if (!line.trim()) { i += 1; continue; }
      const fence = line.match(/^\s*(```|~~~)/);
      if (fence) {
        const body = [];
        i += 1;
        while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
        i += 1;
        box.append(el("pre", {}, el("code", { text: body.join("\n") })));
        continue;
      }
      const heading = line.match(/^(#{1,6})\s+(.*)$/);
      if (heading) {
        box.append(el(`h${Math.min(6, heading[1].length + 2)}`, {}, inline(heading[2])));
        i += 1;
        continue;
      }
      if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { box.append(el("hr")); i += 1; continue; }
      if (isTableRow(line) && i + 1 < lines.length && isTableRule(lines[i + 1])) {
        const table = el("table", { class: "md-table" });
        table.append(el("thead", {}, el("tr", {}, cells(line).map((c) => el("th", {}, inline(c))))));
        const body = el("tbody");
        i += 2;
        while (i < lines.length && isTableRow(lines[i])) {
          body.append(el("tr", {}, cells(lines[i]).map((c) => el("td", {}, inline(c)))));
          i += 1;
        }
        table.append(body);
        box.append(el("div", { class: "table-wrap" }, table));
        continue;
      }
      if (/^\s*>/.test(line)) {
        const quoted = [];
        while (i < lines.length && /^\s*>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ""));
        box.append(el("blockquote", {}, markdown(quoted.join("\n"))));
        continue;
      }
      if (listItem.test(line)) {
        const ordered = /\d/.test(line.match(listItem)[2]);
        const list = el(ordered ? "ol" : "ul");
        while (i < lines.length && listItem.test(lines[i])) {
          const [, indent, , text] = lines[i].match(listItem);
          const item = el("li", {}, inline(text));
          if (indent.length >= 2) item.className = "nested";
          list.append(item);
          i += 1;
          while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !listItem.test(lines[i])) {
            item.append(" ", ...inline(lines[i].trim()));
            i += 1;
          }
        }
        box.append(list);
        continue;
      }
      const paragraph = [];
      while (
        i < lines.length && lines[i].trim() && !/^(#{1,6}\s|\s*(```|~~~)|\s*>)/.test(lines[i]) &&
        !listItem.test(lines[i]) && !(isTableRow(lines[i]) && isTableRule(lines[i + 1] || ""))
      ) paragraph.push(lines[i++]);
      const p = el("p");
      paragraph.forEach((text, n) => {
        if (n) p.append(el("br"));
        p.append(...inline(text));
      });
      box.append(p);
    }
    return box;
  }

  const onCarriedCopy = (resolve) => { carriedCopy = resolve; };
  return { el, link, inline, markdown, safeUrl, onCarriedCopy };
})();
