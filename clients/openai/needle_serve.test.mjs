// needle serve through the official openai npm package: a plain call, a
// streamed call, each tool_choice, a tool-result round trip and a refusal,
// on the embedded default model. Run by scripts/test-openai-client
// (ctest clients.openai): NEEDLE_CLI is the needle binary to serve with.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";

const here = path.dirname(fileURLToPath(import.meta.url));
const cli = process.env.NEEDLE_CLI ?? path.join(here, "..", "..", "build", "bin", "needle");

const tools = [
  { type: "function", function: { name: "get_weather", description: "Get the current weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } },
  { type: "function", function: { name: "set_timer", description: "Start a countdown timer",
    parameters: { type: "object", properties: { minutes: { type: "integer", minimum: 1 } }, required: ["minutes"] } } },
];

let server, client;

before(async () => {
  server = spawn(cli, ["serve", "--port", "0", "--api-key", "test-key"], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  while (!/listening on (http:\/\/\S+)/.test(out)) {
    const [chunk] = await once(server.stdout, "data");
    out += chunk.toString();
  }
  const baseURL = out.match(/listening on (http:\/\/\S+)/)[1] + "/v1";
  client = new OpenAI({ baseURL, apiKey: "test-key", maxRetries: 0 });
});

after(async () => {
  server.kill("SIGTERM");
  const [code] = await once(server, "exit");
  assert.equal(code, 0, "needle serve exits cleanly on SIGTERM");
});

const ask = (content, extra = {}) =>
  client.chat.completions.create({ model: "needle-mini", messages: [{ role: "user", content }], tools, ...extra });

test("a plain call", async () => {
  const r = await ask("what's the weather in Lagos?");
  const [choice] = r.choices;
  assert.equal(choice.finish_reason, "tool_calls");
  const [call] = choice.message.tool_calls;
  assert.equal(call.type, "function");
  assert.ok(call.id.length > 0);
  assert.equal(call.function.name, "get_weather");
  assert.deepEqual(JSON.parse(call.function.arguments), { city: "Lagos" });
  assert.ok(r.usage.prompt_tokens > 0 && r.usage.total_tokens === r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.equal(typeof r.needle.confidence, "number");
});

test("a streamed call", async () => {
  const stream = await ask("what's the weather in Lagos?", { stream: true, stream_options: { include_usage: true } });
  const calls = [];
  let finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    if (choice.finish_reason) finish = choice.finish_reason;
    for (const d of choice.delta.tool_calls ?? []) {
      calls[d.index] ??= { id: "", name: "", arguments: "" };
      if (d.id) calls[d.index].id = d.id;
      if (d.function?.name) calls[d.index].name += d.function.name;
      if (d.function?.arguments) calls[d.index].arguments += d.function.arguments;
    }
  }
  assert.equal(finish, "tool_calls");
  assert.equal(calls.length, 1);
  assert.ok(calls[0].id.length > 0);
  assert.equal(calls[0].name, "get_weather");
  assert.deepEqual(JSON.parse(calls[0].arguments), { city: "Lagos" });
  assert.ok(usage && usage.total_tokens > 0);
});

test("each tool_choice", async () => {
  const auto = await ask("start a timer for 5 minutes", { tool_choice: "auto" });
  assert.equal(auto.choices[0].message.tool_calls[0].function.name, "set_timer");
  const none = await ask("start a timer for 5 minutes", { tool_choice: "none" });
  assert.equal(none.choices[0].finish_reason, "stop");
  assert.equal(none.choices[0].message.tool_calls, undefined);
  const required = await ask("hello", { tool_choice: "required" });  // refused under auto
  assert.equal(required.choices[0].finish_reason, "tool_calls");
  assert.ok(required.choices[0].message.tool_calls.length >= 1);
  const named = await ask("what's the weather in Lagos?", { tool_choice: { type: "function", function: { name: "set_timer" } } });
  for (const c of named.choices[0].message.tool_calls) assert.equal(c.function.name, "set_timer");
  await assert.rejects(ask("hi", { tool_choice: { type: "function", function: { name: "nope" } } }),
    (e) => e.status === 400 && e.param === "tool_choice");
});

test("a tool-result round trip", async () => {
  const messages = [{ role: "user", content: "what's the weather in Lagos?" }];
  const first = await client.chat.completions.create({ model: "needle-mini", messages, tools });
  const message = first.choices[0].message;
  assert.ok(message.tool_calls?.length);
  messages.push(message);
  for (const c of message.tool_calls) {
    messages.push({ role: "tool", tool_call_id: c.id, content: JSON.stringify({ city: "Lagos", temp_c: 27, sky: "clear" }) });
  }
  const second = await client.chat.completions.create({ model: "needle-mini", messages, tools });
  assert.equal(second.object, "chat.completion");
  assert.ok(["respond", "call"].includes(second.needle.type), JSON.stringify(second.needle));
});

test("a refusal", async () => {
  const r = await ask("tell me a joke");
  assert.equal(r.choices[0].finish_reason, "stop");
  assert.equal(r.choices[0].message.tool_calls, undefined);
  assert.equal(r.needle.type, "refuse");
});

test("the key is required", async () => {
  const anonymous = new OpenAI({ baseURL: client.baseURL, apiKey: "wrong", maxRetries: 0 });
  await assert.rejects(anonymous.models.list(), (e) => e.status === 401);
  const models = await client.models.list();
  assert.equal(models.data[0].id, "needle-mini");
});
