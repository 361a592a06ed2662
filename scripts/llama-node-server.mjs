#!/usr/bin/env node
// A local model server for the slow tier and scripts/real-model-smoke: a real GGUF model run by
// llama.cpp (the prebuilt runtime of the npm package node-llama-cpp), served over the wire
// llama.cpp's own llama-server speaks, so the harnesses meet it as they would meet llama-server:
//
//   POST /v1/chat/completions  Chat Completions, streamed (chat.completion.chunk, a usage chunk
//                              with stream_options.include_usage, [DONE]) or whole; tools go to
//                              the model as llama-server's generic tool format does (the tools'
//                              JSON in the system turn; a reply {"tool_call": {...}} is a call)
//   GET  /v1/models            the model, with meta.n_ctx
//   GET  /props                default_generation_settings.n_ctx, as llama-server
//   POST /tokenize             {"content"} -> {"tokens"}, the model's own tokenizer
//   GET  /health               {"status": "ok"} once the model is loaded
//   anything else              llama-server's 404
//
// The prompt is the model's own chat template (node-llama-cpp resolves it from the GGUF); usage
// counts the prompt's tokens and the tokens generated; a prompt over the context is
// llama-server's HTTP 400 exceed_context_size_error. Requests run one at a time (one slot).
//
//   node scripts/llama-node-server.mjs --runtime DIR --model FILE.gguf [--alias NAME]
//        [--ctx-size 8192] [--threads 1] [--port 0] [--max-tokens 256] [--usage-log FILE]
//
// --usage-log appends one JSON line per completion (id, usage, finish_reason): what the server
// counted, for a test to hold the harness's record against.
//
// DIR is the npm prefix node-llama-cpp is installed in (scripts/install-real-model). On start it
// prints one line to stdout: "listening on http://127.0.0.1:PORT".
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";

function parseArgs(argv) {
  const options = { ctxSize: 8192, threads: 1, port: 0, alias: null, maxTokens: 256, usageLog: null };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) fail(`${flag} needs a value`);
    if (flag === "--runtime") options.runtime = value;
    else if (flag === "--model") options.model = value;
    else if (flag === "--alias") options.alias = value;
    else if (flag === "--ctx-size") options.ctxSize = Number(value);
    else if (flag === "--threads") options.threads = Number(value);
    else if (flag === "--port") options.port = Number(value);
    else if (flag === "--max-tokens") options.maxTokens = Number(value);
    else if (flag === "--usage-log") options.usageLog = value;
    else fail(`unknown option ${flag}`);
  }
  if (!options.runtime || !options.model) fail("give --runtime DIR and --model FILE.gguf");
  return options;
}

function fail(message) {
  process.stderr.write(`llama-node-server: ${message}\n`);
  process.exit(2);
}

const options = parseArgs(process.argv.slice(2));
const entry = path.join(path.resolve(options.runtime), "node_modules/node-llama-cpp/dist/index.js");
const nlc = await import(pathToFileURL(entry).href).catch((error) =>
  fail(`cannot load node-llama-cpp from ${options.runtime}: ${error.message}`),
);
const llama = await nlc.getLlama({ gpu: false, build: "never", progressLogs: false });
const model = await llama.loadModel({ modelPath: options.model });
const context = await model.createContext({
  contextSize: options.ctxSize,
  threads: options.threads,
});
const sequence = context.getSequence();
const wrapper = nlc.resolveChatWrapper(model);
const alias = options.alias || path.basename(options.model).replace(/\.gguf$/, "");
let queue = Promise.resolve();
let ids = 0;

function toolSystemText(tools) {
  const functions = tools.map((t) => t.function || t);
  return (
    "You can call these tools (JSON schema):\n" +
    JSON.stringify(functions) +
    '\nTo call one, reply with only {"tool_call": {"name": NAME, "arguments": {...}}}; ' +
    'otherwise reply with {"response": YOUR ANSWER} or plain text.'
  );
}

function history(messages, tools) {
  const items = [];
  let system = messages.filter((m) => m.role === "system").map((m) => text(m.content)).join("\n");
  if (tools && tools.length) system = (system ? system + "\n\n" : "") + toolSystemText(tools);
  if (system) items.push({ type: "system", text: system });
  for (const message of messages) {
    if (message.role === "user") items.push({ type: "user", text: text(message.content) });
    else if (message.role === "tool")
      items.push({ type: "user", text: `Tool result (${message.tool_call_id}):\n${text(message.content)}` });
    else if (message.role === "assistant") {
      const calls = (message.tool_calls || []).map((c) =>
        JSON.stringify({ tool_call: { name: c.function.name, arguments: c.function.arguments } }),
      );
      items.push({ type: "model", response: [text(message.content) + calls.join("\n")] });
    }
  }
  if (!items.length || items[items.length - 1].type !== "model") items.push({ type: "model", response: [] });
  return items;
}

function text(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => part.text || "").join("");
  return content == null ? "" : String(content);
}

function promptTokens(items) {
  const { contextText } = wrapper.generateContextState({ chatHistory: items });
  return contextText.tokenize(model.tokenizer).length;
}

function toolCall(reply) {
  const start = reply.indexOf("{");
  if (start < 0) return null;
  try {
    const parsed = JSON.parse(reply.slice(start, reply.lastIndexOf("}") + 1));
    const call = parsed && parsed.tool_call;
    if (!call || typeof call.name !== "string") return null;
    const args = typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments || {});
    return { id: `call_${++ids}`, type: "function", function: { name: call.name, arguments: args } };
  } catch {
    return null;
  }
}

function send(response, status, body) {
  const data = JSON.stringify(body);
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(data) });
  response.end(data);
}

function errorBody(code, message, type, extra = {}) {
  return { error: { code, message, type, ...extra } };
}

async function complete(body, response) {
  const messages = Array.isArray(body.messages) ? body.messages : null;
  if (!messages) return send(response, 400, errorBody(400, "'messages' is required", "invalid_request_error"));
  const items = history(messages, body.tools);
  const nPrompt = promptTokens(items);
  if (nPrompt >= options.ctxSize) {
    const message = `request (${nPrompt} tokens) exceeds the available context size (${options.ctxSize} tokens), try increasing it`;
    return send(response, 400, errorBody(400, message, "exceed_context_size_error", { n_prompt_tokens: nPrompt, n_ctx: options.ctxSize }));
  }
  const cap = Math.min(body.max_completion_tokens || body.max_tokens || options.maxTokens, options.ctxSize - nPrompt);
  const id = `chatcmpl-${++ids}`;
  const created = Math.floor(Date.now() / 1000);
  const stream = body.stream === true;
  const base = { id, created, model: alias };
  const chunk = (delta, finish = null) => ({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] });
  const started = performance.now();
  let firstToken = null;
  let generated = 0;
  if (stream) {
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    response.write(`data: ${JSON.stringify(chunk({ role: "assistant", content: null }))}\n\n`);
  }
  const chat = new nlc.LlamaChat({ contextSequence: sequence, chatWrapper: wrapper, autoDisposeSequence: false });
  const abort = new AbortController(); // a client that hangs up frees the slot, as in llama-server
  response.on("close", () => abort.abort());
  const withTools = Array.isArray(body.tools) && body.tools.length > 0;
  let result;
  try {
    result = await chat.generateResponse(items.slice(0, -1).concat([items[items.length - 1]]), {
      maxTokens: cap,
      signal: abort.signal,
      stopOnAbortSignal: true,
      temperature: typeof body.temperature === "number" ? body.temperature : 0,
      onToken: (tokens) => {
        firstToken = firstToken ?? performance.now();
        generated += tokens.length;
      },
      onTextChunk: (piece) => {
        if (stream && !withTools) response.write(`data: ${JSON.stringify(chunk({ content: piece }))}\n\n`);
      },
    });
  } finally {
    chat.dispose({ disposeSequence: false });
  }
  if (abort.signal.aborted) return;
  const reply = result.response;
  const call = withTools ? toolCall(reply) : null;
  let content = call ? null : reply;
  if (withTools && !call) {
    try {
      const parsed = JSON.parse(reply);
      if (parsed && typeof parsed.response === "string") content = parsed.response;
    } catch {}
  }
  const finish = call ? "tool_calls" : result.metadata.stopReason === "maxTokens" ? "length" : "stop";
  const usage = { prompt_tokens: nPrompt, completion_tokens: generated, total_tokens: nPrompt + generated };
  const promptMs = (firstToken ?? performance.now()) - started;
  if (options.usageLog)
    fs.appendFileSync(options.usageLog, JSON.stringify({ id, usage, finish_reason: finish, stream }) + "\n");
  const timings = { prompt_n: nPrompt, prompt_ms: promptMs, prompt_per_second: (1000 * nPrompt) / Math.max(promptMs, 1), predicted_n: generated };
  if (stream) {
    if (withTools && content) response.write(`data: ${JSON.stringify(chunk({ content }))}\n\n`);
    if (call) response.write(`data: ${JSON.stringify(chunk({ tool_calls: [{ index: 0, ...call }] }))}\n\n`);
    response.write(`data: ${JSON.stringify({ ...chunk({}, finish), timings })}\n\n`);
    if (body.stream_options && body.stream_options.include_usage)
      response.write(`data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices: [], usage })}\n\n`);
    response.end("data: [DONE]\n\n");
    return;
  }
  const message = { role: "assistant", content };
  if (call) message.tool_calls = [call];
  send(response, 200, { ...base, object: "chat.completion", choices: [{ index: 0, message, finish_reason: finish }], usage, timings });
}

function modelInfo() {
  return {
    id: alias, object: "model", created: 0, owned_by: "llamacpp", aliases: [alias],
    meta: { n_ctx: options.ctxSize, n_ctx_train: model.trainContextSize },
  };
}

const server = http.createServer((request, response) => {
  const url = request.url.split("?")[0].replace(/\/+$/, "");
  let raw = "";
  request.on("data", (piece) => (raw += piece));
  request.on("end", () => {
    let body = {};
    try {
      body = raw ? JSON.parse(raw) : {};
    } catch {
      return send(response, 400, errorBody(400, "invalid JSON body", "invalid_request_error"));
    }
    if (request.method === "GET" && url === "/health") return send(response, 200, { status: "ok" });
    if (request.method === "GET" && url === "/v1/models") return send(response, 200, { object: "list", data: [modelInfo()] });
    if (request.method === "GET" && url === "/props")
      return send(response, 200, { default_generation_settings: { n_ctx: options.ctxSize, params: {} }, total_slots: 1, model_alias: alias, model_path: options.model });
    if (request.method === "POST" && url === "/tokenize")
      return send(response, 200, { tokens: Array.from(model.tokenize(String(body.content || ""))) });
    if (request.method === "POST" && (url === "/v1/chat/completions" || url === "/chat/completions")) {
      queue = queue.then(() => complete(body, response)).catch((error) => {
        if (!response.headersSent) send(response, 500, errorBody(500, String(error && error.message), "server_error"));
        else response.end();
      });
      return;
    }
    send(response, 404, errorBody(404, "File Not Found", "not_found_error"));
  });
});
server.listen(options.port, "127.0.0.1", () => {
  process.stdout.write(`listening on http://127.0.0.1:${server.address().port}\n`);
});
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => process.exit(0));
