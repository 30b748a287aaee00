// The onnxruntime-web runner: serve the page, drive Chromium on it, write what it observed.
//
// node drive.mjs --modules DIR --chromium PATH --profile DIR --bundle B --target-id ID --ep wasm
//   --ep-name CPUExecutionProvider --threads N --out OBSDIR [--batch-sizes 1,8] [--latency-runs N]
// node drive.mjs --profile-root DIR --jobs FILE
// DIR holds node_modules/{onnxruntime-web,playwright-core} of one release. A local HTTP server on
// 127.0.0.1 sends COOP/COEP (without them crossOriginIsolated is false and wasm threads silently
// drop to 1) and serves the page, the node runner's TensorProto codec and common.mjs, onnxruntime-web's dist/ and
// the bundle's listed files; the page POSTs back each output file and the Observation. The browser is Chromium at
// PATH (never a downloaded one) with a fresh profile at --profile; the console is kept as verbose.log
// (the "Node placements" lines), and the phases' timings as web_timings.json.
//
// With --jobs (ci_onnx.runners.batch's file: one cell's arguments per job) one server and one
// browser serve every cell in turn, each in a fresh browser context and page; after each cell a
// marker line on stderr (ci_onnx.runners.batch.MARKER INDEX RC), after that cell's own error line.
// The browser's profile is playwright's temporary one, made under --profile-root (TMPDIR), so the
// parent's sweep finds it; a cell whose flags differ from the browser's gets a browser of its own.
//
// Every other process on the machine can reach 127.0.0.1, so the server trusts none of them: each
// cell has a secret of its own, in the page's URL only (http://127.0.0.1:PORT/s/SECRET/; the page
// asks for everything by relative URLs, so every request carries it) and never written anywhere
// (it is cut from the console log and every message). A request without the cell's secret, or with
// a Host other than the server's, is refused; the bundle serves only the files its manifest lists,
// and no path (the bundle's, onnxruntime-web's, the runner's) may lead out of its folder through a
// symlink. No request line, however broken, ends the server.

import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SHARED = { '/codec/tensorproto.mjs': 'tensorproto.mjs', '/codec/common.mjs': 'common.mjs' }; // the node runner's
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
    else if (k === '--ep-name') args.epName = v;
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

// `rel` inside `root`, or null: nothing outside the served folders is ever read or written. With
// `real`, the file must exist and its real path (links followed) must still be inside `root`'s.
function within(root, rel, real = false) {
  let decoded;
  try {
    decoded = decodeURIComponent(rel);
  } catch {
    return null;
  }
  if (decoded.includes('\0')) return null;
  const full = path.resolve(root, decoded);
  if (full !== root && !full.startsWith(root + path.sep)) return null;
  if (!real) return full;
  try {
    const top = fs.realpathSync(root);
    const found = fs.realpathSync(full);
    return found === top || found.startsWith(top + path.sep) ? found : null;
  } catch {
    return null;
  }
}

// The files of the bundle the page may read: manifest.json and what manifest.files lists.
function listedFiles(bundle) {
  const listed = new Set(['manifest.json']);
  try {
    const manifest = JSON.parse(fs.readFileSync(path.join(bundle, 'manifest.json'), 'utf8'));
    for (const rel of Object.keys(manifest?.files ?? {})) listed.add(rel);
  } catch {
    // an unreadable manifest: the page fails on it, saying so
  }
  return listed;
}

const newSecret = () => crypto.randomBytes(24).toString('hex');

function sameSecret(given, secret) {
  const a = Buffer.from(given);
  const b = Buffer.from(secret);
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

// The part of a request's path after /s/SECRET, or null when the request does not carry the secret.
function afterSecret(url, secret) {
  const bare = String(url ?? '').split(/[?#]/)[0];
  const m = /^\/s\/([0-9a-f]+)(\/.*)$/.exec(bare);
  return m && secret && sameSecret(m[1], secret) ? m[2] : null;
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

// `current()` is the cell in flight ({ args, config, settle, secret, listed }): one server serves
// cells in turn, and a page of an earlier cell no longer holds a secret that works.
function serve(current, host) {
  const files = (cell, p) => {
    const { args } = cell;
    const ortDist = path.join(args.modules, 'node_modules', 'onnxruntime-web', 'dist');
    const bundle = path.resolve(args.bundle);
    if (p === '/' || p === '/index.html') return path.join(HERE, 'page.html');
    if (Object.hasOwn(SHARED, p)) return path.join(HERE, '..', 'node', SHARED[p]);
    if (p.startsWith('/runner/')) return within(HERE, p.slice(8), true);
    if (p.startsWith('/ort/')) return within(ortDist, p.slice(5), true);
    if (p.startsWith('/bundle/')) {
      const rel = within(bundle, p.slice(8));
      const name = rel && path.relative(bundle, rel).split(path.sep).join('/');
      return name && cell.listed.has(name) ? within(bundle, p.slice(8), true) : null;
    }
    return null;
  };
  const server = http.createServer(async (req, res) => {
    try {
      res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
      res.setHeader('Cross-Origin-Embedder-Policy', 'require-corp');
      res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
      res.setHeader('Cache-Control', 'no-store');
      const cell = current();
      const p = cell ? afterSecret(req.url, cell.secret) : null;
      if (req.headers.host !== host() || p === null) {
        res.writeHead(403).end();
        req.resume();
        return;
      }
      const { args, config, settle } = cell;
      const out = path.resolve(args.out);
      if (req.method === 'GET' && p === '/config.json') {
        res.writeHead(200, { 'Content-Type': TYPES['.json'] }).end(JSON.stringify(config));
        return;
      }
      if (req.method === 'GET') {
        const file = files(cell, p);
        if (!file || !fs.statSync(file, { throwIfNoEntry: false })?.isFile()) {
          res.writeHead(404).end();
          return;
        }
        res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
        fs.createReadStream(file).on('error', () => res.destroy()).pipe(res);
        return;
      }
      if (req.method !== 'POST') {
        res.writeHead(405).end();
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
      if (!res.headersSent) res.writeHead(500).end(String(e?.message ?? e));
      else res.destroy();
    }
  });
  server.on('clientError', (_err, socket) => socket.destroy()); // a request line no parser takes
  return server;
}

function cellConfig(args) {
  const ortDir = path.join(args.modules, 'node_modules', 'onnxruntime-web');
  const version = JSON.parse(fs.readFileSync(path.join(ortDir, 'package.json'), 'utf8')).version;
  const ortFile = ['ort.all.min.mjs', 'ort.webgpu.min.mjs', 'ort.min.mjs']
    .find((f) => fs.existsSync(path.join(ortDir, 'dist', f)));
  if (!ortFile) throw new Error(`onnxruntime-web ${version} ships no ES module bundle in dist/`);
  return {
    version, ortFile, ep: args.ep, epName: args.epName, threads: args.threads, targetId: args.targetId,
    batchSizes: args.batchSizes, latencyRuns: args.latencyRuns,
  };
}

// One cell: `open()` gives { page, close } (and fills timings.browser_start_ms); the page is
// pointed at the server, whose cell in flight is set to this one; what it posts is written to --out.
async function observeCell(args, cell, url, open) {
  fs.mkdirSync(args.out, { recursive: true });
  const config = cellConfig(args);
  const secret = newSecret();
  const hide = (text) => String(text).split(secret).join('…'); // the secret is written nowhere
  const done = new Promise((resolve, reject) => {
    cell.current = {
      args, config, secret, listed: listedFiles(path.resolve(args.bundle)),
      settle: (err, body) => (err ? reject(new Error(hide(err.message))) : resolve(body)),
    };
  });
  const mine = cell.current;
  const settle = (err) => mine.settle(err); // this cell's, whatever the server serves by then
  const timings = {};
  const log = [];
  let opened;
  try {
    opened = await open(timings);
    const { page } = opened;
    page.on('console', (m) => log.push(hide(m.text())));
    page.on('pageerror', (e) => settle(new Error(`the page threw: ${String(e?.message ?? e).split('\n')[0]}`)));
    page.on('crash', () => settle(new Error('the page crashed (out of memory, or a renderer fault)')));
    const t1 = performance.now();
    await page.goto(`${url}s/${secret}/`, { waitUntil: 'load' });
    timings.page_load_ms = performance.now() - t1;
    const body = await done;
    timings.page_total_ms = performance.now() - t1;
    fs.writeFileSync(path.join(args.out, 'observation.json'), body);
  } catch (e) {
    throw new Error(hide(e?.message ?? e));
  } finally {
    cell.current = null; // this cell's secret works no more
    fs.writeFileSync(path.join(args.out, 'verbose.log'), `${log.join('\n')}\n`);
    const tPath = path.join(args.out, 'web_timings.json');
    const page = fs.existsSync(tPath) ? JSON.parse(fs.readFileSync(tPath, 'utf8')) : {};
    fs.writeFileSync(tPath, JSON.stringify({ ...page, ...timings }));
    await opened?.close().catch(() => {});
  }
}

export async function listen(cell) {
  let host = '';
  const server = serve(() => cell.current, () => host);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  host = `127.0.0.1:${server.address().port}`;
  return { server, url: `http://${host}/` };
}

export { listedFiles, newSecret };

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
