// The playground of needle serve, end to end in headless Chromium (Debian's
// /usr/bin/chromium, driven by puppeteer-core): load it, choose a preset,
// send a request, see the call, send a tool result, see the follow-up, and
// save a screenshot; then fine-tune on the preset's tools from the page,
// watch the progress bar, switch the server to the new model and use it. Run by scripts/test-playground (ctest clients.playground):
// NEEDLE_CLI is the needle binary, NEEDLE_SCREENSHOT where the picture goes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { fileURLToPath } from "node:url";
import puppeteer from "puppeteer-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const cli = process.env.NEEDLE_CLI ?? path.join(here, "..", "..", "build", "bin", "needle");
const screenshot = process.env.NEEDLE_SCREENSHOT ?? path.join(here, "..", "..", "build", "playground.png");

let server, browser, url;

before(async () => {
  server = spawn(cli, ["serve", "--port", "0"], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  while (!/listening on (http:\/\/\S+)/.test(out)) out += (await once(server.stdout, "data"))[0].toString();
  url = out.match(/listening on (http:\/\/\S+)/)[1] + "/";
  browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
});

after(async () => {
  await browser?.close();
  server.kill("SIGTERM");
  await once(server, "exit");
});

test("load, preset, request, call, tool result, follow-up", async () => {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 860 });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(url, { waitUntil: "networkidle0" });
  assert.equal(await page.title(), "Needle playground");
  await page.waitForFunction(() => document.getElementById("model").textContent !== "…");

  // A preset fills the editor; the server checks its schemas.
  await page.select("#preset", "phone");
  await page.waitForFunction(() => document.getElementById("tools-status").textContent.includes("schemas valid"));
  const tools = JSON.parse(await page.$eval("#tools", (e) => e.value));
  assert.ok(tools.some((t) => t.name === "send_message"));

  // A schema the grammar does not enforce is named in the editor.
  await page.$eval("#tools", (e) => { e.value = '[{"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "string", "if": {}}}}}]'; e.dispatchEvent(new Event("input")); });
  await page.waitForFunction(() => document.getElementById("tools-status").className === "bad");
  assert.match(await page.$eval("#tools-status", (e) => e.textContent), /if/);

  // Back to the smart home: a request, its call.
  await page.select("#preset", "smart home");
  await page.waitForFunction(() => document.getElementById("tools-status").textContent.includes("schemas valid"));
  await page.$eval("#request", (e) => { e.value = "dim the kitchen lights to 30 percent"; });
  await page.click("#send");
  await page.waitForSelector(".answer .call");
  const call = await page.$eval(".answer .call", (e) => e.dataset.name);
  assert.equal(call, "set_lights");
  assert.match(await page.$eval(".answer", (e) => e.textContent), /confidence/);
  assert.match(await page.$eval("#cache", (e) => e.textContent), /sinks: \d+ tokens/);
  // The cache token by token: the pinned tools, then the conversation.
  assert.ok(await page.$$eval("#cache-tokens .sink", (es) => es.length) > 20);
  assert.match(await page.$$eval("#cache-tokens .window", (es) => es.map((e) => e.textContent).join("")), /kitchen/);

  // The tool's result: the follow-up answer.
  assert.equal(await page.$eval("#send-result", (e) => e.disabled), false);
  await page.type("#result", '{"ok": true, "brightness": 30}');
  await page.click("#send-result");
  await page.waitForFunction(() => document.querySelectorAll(".answer").length === 2);
  const followUp = await page.$$eval(".answer [data-type]", (es) => es.map((e) => e.dataset.type));
  assert.ok(["respond", "call"].includes(followUp[1]), followUp.join(","));
  assert.equal(await page.$eval("#error", (e) => e.textContent), "");

  await page.screenshot({ path: screenshot, fullPage: true });
  assert.deepEqual(errors, []);
});

test("fine-tune from the page, then serve the new model", async (t) => {
  const page = await browser.newPage();
  await page.goto(url, { waitUntil: "networkidle0" });
  await page.select("#preset", "smart home");
  await page.waitForFunction(() => document.getElementById("tools-status").textContent.includes("schemas valid"));
  await page.$eval("#ft-generate", (e) => { e.value = "20"; });
  await page.click("#ft-start");
  await page.waitForFunction(() => ["running", "done", "failed", "refused"].includes(document.getElementById("ft-status").dataset.state));
  if (await page.$eval("#ft-status", (e) => e.dataset.state) === "refused") {
    assert.match(await page.$eval("#ft-status", (e) => e.textContent), /trainer is not built/);
    t.skip("needle-train is not built here (no libtorch): the page says so");
    return;
  }
  let widths = new Set();
  for (;;) {
    const state = await page.$eval("#ft-status", (e) => e.dataset.state);
    widths.add(await page.$eval("#ft-bar", (e) => e.style.width));
    if (state !== "running") break;
    await new Promise((r) => setTimeout(r, 300));
  }
  assert.equal(await page.$eval("#ft-status", (e) => e.dataset.state), "done", await page.$eval("#ft-status", (e) => e.textContent));
  assert.equal(await page.$eval("#ft-bar", (e) => e.style.width), "100%");
  assert.ok(widths.size >= 2, "the progress bar moved: " + [...widths].join(" "));
  assert.equal(await page.$eval("#ft-use", (e) => e.disabled), false);
  await page.click("#ft-use");
  await page.waitForFunction(() => document.getElementById("ft-status").dataset.state === "serving");
  await page.$eval("#request", (e) => { e.value = "dim the kitchen lights to 30 percent"; });
  await page.click("#send");
  await page.waitForSelector(".answer [data-type]");
  assert.ok(["call", "refuse"].includes(await page.$eval(".answer [data-type]", (e) => e.dataset.type)));
});
