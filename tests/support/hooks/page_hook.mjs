// A test hook (tests only): preloaded into the web driver (node --import) by ./die when
// $ONNX_GATE_TEST_RUNNER_DIE is set. Every page the driver opens gets an init script that learns its
// cell from config.json and, where HOW[:GLOB] names the cell, once the observed session is created
// (the console line page.mjs logs before its first run): `throw` makes the page throw, `hang` makes
// every later request of the page wait forever.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const SPEC = process.env.ONNX_GATE_TEST_RUNNER_DIE ?? '';
const RUNS_BEGIN = 'onnx-gate: the observed session is created; its runs follow';

function inPage(spec, begin) {
  const glob = (p, t) => new RegExp(`^${p.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`).test(t);
  let how = '';
  let armed = false;
  const realFetch = window.fetch.bind(window);
  window.fetch = async (url, init) => {
    if (armed && how === 'hang') return new Promise(() => {});
    const r = await realFetch(url, init);
    if (String(url).endsWith('config.json')) {
      const { targetId } = await r.clone().json();
      for (const entry of spec.split(';')) {
        const [h, p] = entry.split(/:(.*)/s);
        if (h && (!p || glob(p, targetId))) {
          how = h;
          break;
        }
      }
    }
    return r;
  };
  const log = console.log.bind(console);
  console.log = (...a) => {
    log(...a);
    if (a[0] !== begin || !how) return;
    armed = true;
    if (how === 'throw') throw new Error('onnx-gate test: the page throws after creating the session');
  };
}

function modules(argv) {
  const at = argv.indexOf('--modules');
  if (at >= 0) return argv[at + 1];
  const jobs = argv.indexOf('--jobs');
  if (jobs < 0) return null;
  for (const job of JSON.parse(fs.readFileSync(argv[jobs + 1], 'utf8'))) {
    const i = job.argv.indexOf('--modules');
    if (i >= 0) return job.argv[i + 1];
  }
  return null;
}

const dir = modules(process.argv.slice(2));
if (SPEC && dir) {
  const { chromium } = createRequire(import.meta.url)(path.join(dir, 'node_modules', 'playwright-core'));
  const script = { content: `(${inPage.toString()})(${JSON.stringify(SPEC)}, ${JSON.stringify(RUNS_BEGIN)})` };
  const launch = chromium.launch.bind(chromium);
  chromium.launch = async (...a) => {
    const browser = await launch(...a);
    const newContext = browser.newContext.bind(browser);
    browser.newContext = async (...c) => {
      const context = await newContext(...c);
      await context.addInitScript(script);
      return context;
    };
    return browser;
  };
  const persistent = chromium.launchPersistentContext.bind(chromium);
  chromium.launchPersistentContext = async (...a) => {
    const context = await persistent(...a);
    await context.addInitScript(script);
    return context;
  };
}
