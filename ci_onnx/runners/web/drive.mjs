// The onnxruntime-web runner: serve the page, drive Chromium on it, write what it observed.
//
// node drive.mjs --modules DIR --chromium PATH --profile DIR --bundle B --target-id ID --ep wasm
//   --threads N --out OBSDIR [--batch-sizes 1,8] [--latency-runs N]
// node drive.mjs --profile-root DIR --jobs FILE
// DIR holds node_modules/{onnxruntime-web,playwright-core} of one release. A local HTTP server on
// 127.0.0.1 sends COOP/COEP (without them crossOriginIsolated is false and wasm threads silently
// drop to 1) and serves the page, the node runner's TensorProto codec, onnxruntime-web's dist/ and
// the bundle; the page POSTs back each output file and the Observation. The browser is Chromium at
// PATH (never a downloaded one) with a fresh profile at --profile; the console is kept as verbose.log
// (the "Node placements" lines), and the phases' timings as web_timings.json.
//
// With --jobs (ci_onnx.runners.batch's file: one cell's arguments per job) one server and one
// browser serve every cell in turn, each in a fresh browser context and page; after each cell a
// marker line on stderr (ci_onnx.runners.batch.MARKER INDEX RC), after that cell's own error line.
// The browser's profile is playwright's temporary one, made under --profile-root (TMPDIR), so the
// parent's sweep finds it; a cell whose flags differ from the browser's gets a browser of its own.

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CODEC = path.join(HERE, '..', 'node', 'tensorproto.mjs');
const DIE_ENV = 'ONNX_GATE_TEST_RUNNER_DIE';
const BASE_FLAGS = ['--headless', '--no-sandbox', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run', '--enable-blink-features=ForceEagerMeasureMemory'];
const WEBGPU_FLAGS = ['--enable-unsafe-webgpu', '--enable-features=Vulkan', '--use-vulkan=swiftshader',
  '--use-webgpu-adapter=swiftshader', '--use-angle=swiftshader'];
const TYPES = { '.html': 'text/html', '.mjs': 'text/javascript', '.js': 'text/javascript',
  '.wasm': 'application/wasm', '.json': 'application/json' };
const MAX_POST = 1 << 30;
const MARKER = 'onnx-gate-batch-done';

export function flags(ep) {
  return ep === 'webgpu' ? [...BASE_FLAGS, ...WEBGPU_FLAGS] : [...BASE_FLAGS, '--disable-gpu'];
}

function parseArgs(argv) {
  const args = { latencyRuns: 20, batchSizes: [], threads: 1 };
  for (let i = 0; i < argv.length; i += 2) {
    const [k, v] = [argv[i], argv[i + 1]];
    if (k === '--modules') args.modules = v;
    else if (k === '--chromium') args.chromium = v;
    else if (k === '--profile') args.profile = v;
    else if (k === '--bundle') args.bundle = v;
    else if (k === '--target-id') args.targetId = v;
    else if (k === '--ep') args.ep = v;
    else if (k === '--threads') args.threads = Number(v);
    else if (k === '--out') args.out = v;
    else if (k === '--latency-runs') args.latencyRuns = Number(v);
    else if (k === '--batch-sizes') args.batchSizes = v ? v.split(',').map(Number) : [];
    else if (k === '--jobs') args.jobs = v;
    else if (k === '--profile-root') args.profileRoot = v;
    else throw new Error(`unknown argument ${k}`);
  }
  return args;
}

function globMatch(pattern, text) {
  const re = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${re}$`).test(text);
}

// HOW[:PATTERN][;HOW[:PATTERN]…]: the first entry whose pattern matches the cell's id.
function dieFor(targetId) {
  for (const entry of (process.env[DIE_ENV] ?? '').split(';')) {
    const [how, pattern] = entry.split(/:(.*)/s);
    if (how && (!pattern || globMatch(pattern, targetId))) return how;
  }
  return '';
}

// `rel` inside `root`, or null: nothing outside the served folders is ever read or written.
function within(root, rel) {
  const full = path.resolve(root, decodeURIComponent(rel));
  return full === root || full.startsWith(root + path.sep) ? full : null;
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    let n = 0;
    req.on('data', (c) => {
      n += c.length;
      if (n > MAX_POST) reject(new Error('a POST larger than 1 GiB'));
      else parts.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(parts)));
    req.on('error', reject);
  });
}

// `current()` is the cell in flight ({ args, config, settle }): one server serves cells in turn.
function serve(current) {
  const files = (args, p) => {
    const ortDist = path.join(args.modules, 'node_modules', 'onnxruntime-web', 'dist');
    const bundle = path.resolve(args.bundle);
    if (p === '/' || p === '/index.html') return path.join(HERE, 'page.html');
    if (p === '/codec/tensorproto.mjs') return CODEC;
    if (p.startsWith('/runner/')) return within(HERE, p.slice(8));
    if (p.startsWith('/ort/')) return within(ortDist, p.slice(5));
    if (p.startsWith('/bundle/')) return within(bundle, p.slice(8));
    return null;
  };
  return http.createServer(async (req, res) => {
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    res.setHeader('Cross-Origin-Embedder-Policy', 'require-corp');
    res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
    res.setHeader('Cache-Control', 'no-store');
    const p = new URL(req.url, 'http://x').pathname;
    const { args, config, settle } = current();
    const out = path.resolve(args.out);
    try {
      if (req.method === 'GET' && p === '/config.json') {
        res.writeHead(200, { 'Content-Type': TYPES['.json'] }).end(JSON.stringify(config));
        return;
      }
      if (req.method === 'GET') {
        const file = files(args, p);
        if (!file || !fs.statSync(file, { throwIfNoEntry: false })?.isFile()) {
          res.writeHead(404).end();
          return;
        }
        res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
        fs.createReadStream(file).pipe(res);
        return;
      }
      const body = await readBody(req);
      if (p.startsWith('/out/')) {
        const file = within(out, p.slice(5));
        if (!file) throw new Error(`the page wrote outside its folder: ${p}`);
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fs.writeFileSync(file, body);
      } else if (p === '/timings') {
        fs.writeFileSync(path.join(out, 'web_timings.json'), body);
      } else if (p === '/observation') {
        settle(null, body);
      } else if (p === '/fatal') {
        settle(new Error(`the page failed: ${body.toString('utf8')}`));
      } else {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(204).end();
    } catch (e) {
      res.writeHead(500).end(String(e?.message ?? e));
    }
  });
}

function cellConfig(args) {
  const ortDir = path.join(args.modules, 'node_modules', 'onnxruntime-web');
  const version = JSON.parse(fs.readFileSync(path.join(ortDir, 'package.json'), 'utf8')).version;
  const ortFile = ['ort.all.min.mjs', 'ort.webgpu.min.mjs', 'ort.min.mjs']
    .find((f) => fs.existsSync(path.join(ortDir, 'dist', f)));
  if (!ortFile) throw new Error(`onnxruntime-web ${version} ships no ES module bundle in dist/`);
  return {
    version, ortFile, ep: args.ep, threads: args.threads, targetId: args.targetId,
    batchSizes: args.batchSizes, latencyRuns: args.latencyRuns, die: dieFor(args.targetId),
  };
}

// One cell: `open()` gives { page, close } (and fills timings.browser_start_ms); the page is
// pointed at the server, whose cell in flight is set to this one; what it posts is written to --out.
async function observeCell(args, cell, url, open) {
  fs.mkdirSync(args.out, { recursive: true });
  const config = cellConfig(args);
  const done = new Promise((resolve, reject) => {
    cell.current = { args, config, settle: (err, body) => (err ? reject(err) : resolve(body)) };
  });
  const settle = (err) => cell.current.settle(err);
  const timings = {};
  const log = [];
  let opened;
  try {
    opened = await open(timings);
    const { page } = opened;
    page.on('console', (m) => log.push(m.text()));
    page.on('pageerror', (e) => settle(new Error(`the page threw: ${String(e?.message ?? e).split('\n')[0]}`)));
    page.on('crash', () => settle(new Error('the page crashed (out of memory, or a renderer fault)')));
    const t1 = performance.now();
    await page.goto(url, { waitUntil: 'load' });
    timings.page_load_ms = performance.now() - t1;
    const body = await done;
    timings.page_total_ms = performance.now() - t1;
    fs.writeFileSync(path.join(args.out, 'observation.json'), body);
  } finally {
    fs.writeFileSync(path.join(args.out, 'verbose.log'), `${log.join('\n')}\n`);
    const tPath = path.join(args.out, 'web_timings.json');
    const page = fs.existsSync(tPath) ? JSON.parse(fs.readFileSync(tPath, 'utf8')) : {};
    fs.writeFileSync(tPath, JSON.stringify({ ...page, ...timings }));
    await opened?.close().catch(() => {});
  }
}

async function listen(cell) {
  const server = serve(() => cell.current);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${server.address().port}/` };
}

function playwright(modules) {
  const require = createRequire(import.meta.url);
  return require(path.join(modules, 'node_modules', 'playwright-core')).chromium;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.jobs) return jobs(args);
  const cell = {};
  const { server, url } = await listen(cell);
  const chromium = playwright(args.modules);
  try {
    await observeCell(args, cell, url, async (timings) => {
      const t0 = performance.now();
      const context = await chromium.launchPersistentContext(args.profile, {
        executablePath: args.chromium, headless: true, args: flags(args.ep), timeout: 120000,
      });
      timings.browser_start_ms = performance.now() - t0;
      timings.browser_launched = true;
      const page = context.pages()[0] ?? (await context.newPage());
      return { page, close: () => context.close() };
    });
  } finally {
    server.close();
  }
}

// Every job of the file in one browser (a fresh context and page each); one marker line after each.
async function jobs(batchArgs) {
  if (batchArgs.profileRoot) process.env.TMPDIR = batchArgs.profileRoot; // playwright's profile goes there
  const list = JSON.parse(fs.readFileSync(batchArgs.jobs, 'utf8'));
  const cell = {};
  const { server, url } = await listen(cell);
  let browser = null;
  let browserFlags = '';
  try {
    for (const { index, argv } of list) {
      let rc = 0;
      try {
        const args = parseArgs(argv);
        const want = JSON.stringify(flags(args.ep));
        await observeCell(args, cell, url, async (timings) => {
          const t0 = performance.now();
          timings.browser_launched = !browser || !browser.isConnected() || browserFlags !== want;
          if (timings.browser_launched) {
            await browser?.close().catch(() => {});
            browser = await playwright(args.modules).launch({
              executablePath: args.chromium, headless: true, args: JSON.parse(want), timeout: 120000,
            });
            browserFlags = want;
          }
          timings.browser_start_ms = performance.now() - t0; // near 0 where the browser was up
          const context = await browser.newContext();
          const page = await context.newPage();
          return { page, close: () => context.close() };
        });
      } catch (e) {
        process.stderr.write(`web runner: ${String(e?.message ?? e).split('\n')[0]}\n`);
        rc = 1;
      }
      process.stderr.write(`${MARKER} ${index} ${rc}\n`);
    }
  } finally {
    await browser?.close().catch(() => {});
    server.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().then(() => process.exit(0), (e) => {
    process.stderr.write(`web runner: ${String(e?.message ?? e).split('\n')[0]}\n`);
    process.exit(1);
  });
}
