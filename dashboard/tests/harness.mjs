// The e2e harness: the browser, ordered steps with failure screenshots, and the control line
// protocol with the Rust test (crates/dnz/tests/dashboard.rs) that runs this script.
//
// Protocol: `control("dig www.shop.test A")` writes `@@ dig www.shop.test A` on stdout; the
// test answers with one JSON line on stdin: {"ok":true,...} or {"ok":false,"error":"..."}.
// Every other stdout/stderr line is only echoed by the test.

import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (crates/dnz/tests/dashboard.rs sets it)`);
  return value;
}

/// What the Rust test set up, read from the environment it passes.
export const env = {
  url: required('DNZ_URL'),
  dns: required('DNZ_DNS'),
  originPort: Number(required('DNZ_ORIGIN_PORT')),
  geoipUrl: required('DNZ_GEOIP_URL'),
  screenshots: required('SCREENSHOT_DIR'),
  users: {
    superadmin: { name: required('DNZ_SUPERADMIN_USER'), password: required('DNZ_SUPERADMIN_PASSWORD') },
    editor: { name: required('DNZ_EDITOR_USER'), password: required('DNZ_EDITOR_PASSWORD') },
    viewer: { name: required('DNZ_VIEWER_USER'), password: required('DNZ_VIEWER_PASSWORD') },
  },
};

let browser = null;
let context = null;

/// Starts the system Chromium; returns { browser, context, page }.
export async function launch() {
  // Failure screenshots of an earlier run would be mistaken for this one's.
  mkdirSync(env.screenshots, { recursive: true });
  for (const name of readdirSync(env.screenshots)) {
    if (/^failure-\d+\.png$/.test(name)) rmSync(join(env.screenshots, name));
  }
  browser = await chromium.launch({
    executablePath: required('CHROMIUM'),
    args: [
      '--headless=new',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
  // Fixed size and scale so that screenshots are comparable between runs and machines.
  context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  // Fail a step in seconds rather than at the test's overall timeout.
  context.setDefaultTimeout(15_000);
  context.on('page', watch);
  // The test sends SIGTERM on its timeout: close Chromium, then exit (playwright's own
  // handler closes the browser but leaves node running).
  process.once('SIGTERM', () => {
    browser.close().catch(() => {}).finally(() => process.exit(143));
  });
  const page = await context.newPage();
  return { browser, context, page };
}

// Browser-side errors explain most step failures, so they go to the log as they happen.
function watch(page) {
  page.on('pageerror', (error) => console.error(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') {
      const where = message.location().url;
      console.error(`console ${message.type()}: ${message.text()}${where ? ` (${where})` : ''}`);
    }
  });
}

// ---- control protocol -----------------------------------------------------------------------

let lines = null;
const waiting = [];
const buffered = [];

function stdinLines() {
  if (lines) return;
  // Created on first use: an open stdin reader keeps node running.
  lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const next = waiting.shift();
    if (next) next.resolve(line);
    else buffered.push(line);
  });
  lines.on('close', () => {
    for (const next of waiting.splice(0)) next.reject(new Error('the test closed stdin'));
  });
}

function nextLine() {
  stdinLines();
  if (buffered.length) return Promise.resolve(buffered.shift());
  return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
}

/// Asks the test to do something outside the browser (`stop-origin`, `start-origin`,
/// `dig NAME TYPE`, `dig-subnet NAME TYPE SUBNET`); returns its reply, throws on ok:false.
export async function control(command) {
  if (command.includes('\n')) throw new Error(`control command has a newline: ${command}`);
  process.stdout.write(`@@ ${command}\n`);
  const line = await nextLine();
  let reply;
  try {
    reply = JSON.parse(line);
  } catch {
    throw new Error(`control ${command}: not JSON: ${line}`);
  }
  if (!reply.ok) throw new Error(`control ${command}: ${reply.error ?? line}`);
  return reply;
}

/// Polls `fn` until it returns a truthy value (returned) or `timeout` ms pass (throws).
export async function poll(what, fn, { timeout = 15_000, interval = 250 } = {}) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeout} ms (last: ${JSON.stringify(last)})`);
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}

// ---- steps and screenshots ----------------------------------------------------------------

let passed = 0;
let chain = Promise.resolve();

function screenshotPath(name) {
  mkdirSync(env.screenshots, { recursive: true });
  return join(env.screenshots, `${name}.png`);
}

/// A full-page screenshot `<name>.png` in SCREENSHOT_DIR.
export async function shot(page, name) {
  await page.screenshot({ path: screenshotPath(name), fullPage: true });
}

/// Runs `fn` after every earlier step; a failure screenshots the newest open page, prints the
/// error and exits 1, so later steps never run against a broken state.
export function step(name, fn) {
  chain = chain.then(async () => {
    const number = passed + 1;
    const started = Date.now();
    try {
      await fn();
    } catch (error) {
      console.log(`step: ${name} … FAILED (${Date.now() - started} ms)`);
      // Playwright's call logs carry terminal colour codes; the test log is plain text.
      console.error(String(error?.stack ?? error).replace(/\x1b\[[0-9;]*m/g, ''));
      const page = context?.pages().filter((p) => !p.isClosed()).at(-1);
      if (page) {
        const path = screenshotPath(`failure-${number}`);
        await page
          .screenshot({ path, fullPage: true, timeout: 5_000 })
          .then(() => console.error(`screenshot: ${path}`))
          .catch((e) => console.error(`no failure screenshot: ${e.message}`));
      }
      await browser?.close().catch(() => {});
      process.exit(1);
    }
    passed += 1;
    console.log(`step: ${name} … ok (${Date.now() - started} ms)`);
  });
  return chain;
}

/// After the last step: prints the line the test checks for and ends the run.
export async function done() {
  await chain;
  await browser?.close();
  lines?.close();
  console.log(`e2e: ${passed} steps passed`);
  process.exit(0);
}
