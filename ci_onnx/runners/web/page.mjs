// The onnxruntime-web runner's page: observe one bundle on one EP in the browser, draw no verdict.
//
// Served by drive.mjs with COOP/COEP (so crossOriginIsolated holds and wasm threads are real). It
// reads config.json, the bundle under bundle/ with the node runner's TensorProto codec, runs the
// cell's EP, POSTs every output file to out/<path> and the Observation to observation. A failure
// the page cannot report is POSTed to fatal; an uncaught one reaches the driver as a page error.
// Every URL is relative to the page's, which carries the cell's secret (drive.mjs refuses the rest).

import './buffer.mjs'; // before the codec: it needs Buffer
import { batchRuns, latency, message, range, readInputs, round, rows, sweepPoints } from '../codec/common.mjs';
import { readTensor, writeTensor } from '../codec/tensorproto.mjs';

const MEMORY_WAIT_MS = 2000; // it answers within 0.2 s when it answers at all (bench/WEB.md)
// The cell's EP comes by onnxruntime-web's name (cfg.ep) and the name onnxruntime registers it under
// (cfg.epName, providers.toml's, through the host): no table of providers lives here. wasm is the CPU's.
const CPU_EP = 'CPUExecutionProvider';

async function fetchBytes(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

async function post(url, body) {
  const r = await fetch(url, { method: 'POST', body });
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
}

// Outputs computed on the GPU stay there unless asked: read every one back as a CPU tensor.
async function cpuData(t) {
  if (t.location && t.location !== 'cpu' && t.getData) return { type: t.type, dims: t.dims, data: await t.getData() };
  return t;
}

async function save(dir, manifest, got) {
  const files = {};
  for (const [i, spec] of manifest.outputs.entries()) {
    const t = got[spec.name];
    if (!t) continue;
    const rel = `${dir}/output_${i}.pb`;
    const c = await cpuData(t);
    await post(`out/${rel}`, writeTensor({ name: spec.name, type: c.type, dims: c.dims, data: c.data }));
    files[spec.name] = rel;
  }
  return files;
}

// Every session.run of the page with its phase and rows, in web_timings.json's `runs`: where a cell's
// time goes (on SwiftShader one run of a transformer is seconds, bench/WEB.md).
const RUNS = [];
const RUNS_BEGIN = 'onnx-gate: the observed session is created; its runs follow';
async function run(sess, feeds, phase) {
  const t0 = performance.now();
  try {
    return await sess.run(feeds);
  } finally {
    RUNS.push([phase, Object.values(feeds)[0]?.dims[0] ?? 0, round(performance.now() - t0, 3)]);
  }
}

async function memory() {
  if (!self.crossOriginIsolated || typeof performance.measureUserAgentSpecificMemory !== 'function') {
    return [null, 'performance.measureUserAgentSpecificMemory is not available in this browser'];
  }
  // It answers after a garbage collection in every worker, which with wasm threads can take a minute.
  const late = new Promise((resolve) => setTimeout(resolve, MEMORY_WAIT_MS, null));
  const m = await Promise.race([performance.measureUserAgentSpecificMemory(), late]);
  if (m === null) return [null, `performance.measureUserAgentSpecificMemory did not answer within ${MEMORY_WAIT_MS / 1000} s`];
  return [round(m.bytes / 2 ** 20, 2), ''];
}

const bundleFile = (rel) => fetchBytes(`bundle/${rel}`);

async function observe(cfg) {
  const t0 = performance.now();
  const ort = await import(new URL(`../ort/${cfg.ortFile}`, import.meta.url).href);
  const importMs = performance.now() - t0;
  ort.env.wasm.wasmPaths = new URL('../ort/', import.meta.url).href;
  ort.env.wasm.numThreads = cfg.threads;
  ort.env.wasm.proxy = false;
  const manifest = JSON.parse(new TextDecoder().decode(await fetchBytes('bundle/manifest.json')));
  const epName = cfg.epName ?? cfg.ep;
  const eps = cfg.ep === 'wasm' ? ['wasm'] : [cfg.ep, 'wasm'];
  const requested = cfg.ep === 'wasm' ? [epName] : [epName, CPU_EP];
  const environment = {
    runtime_version: cfg.version, providers_available: [], providers_registered: [],
    platform: `${navigator.userAgent} crossOriginIsolated=${self.crossOriginIsolated}`,
    runner: 'ort-web', runner_version: cfg.version,
  };
  const adapter = cfg.ep === 'webgpu' ? await navigator.gpu?.requestAdapter().catch(() => null) : true;
  if (adapter) environment.providers_available.push(epName);
  if (cfg.ep !== 'wasm') environment.providers_available.push(CPU_EP);
  const obs = {
    schema_version: 1, target_id: cfg.targetId, environment, providers_requested: requested,
    outputs: {}, run_errors: {}, batch_outputs: {}, batch_errors: {}, batch_reference: {},
    unmeasured: {}, // the cold start it does not time: runners.toml's can.cold_start, said by collect
    notes: [`wasm threads: ${cfg.threads} (crossOriginIsolated: ${self.crossOriginIsolated})`],
  };
  const timings = { import_ms: round(importMs, 3) };
  const model = await fetchBytes('bundle/model.onnx');

  // The verbose log of one session (its "Node placements" lines reach the console, which the driver
  // keeps), then the session that is observed, created quietly so its timing is not the log's.
  const t1 = performance.now();
  try {
    const verbose = await ort.InferenceSession.create(model, {
      executionProviders: eps, logSeverityLevel: 0, logVerbosityLevel: 0,
    });
    await verbose.release?.();
  } catch (e) {
    return { obs: { ...obs, load_error: message(e) }, timings };
  }
  timings.first_session_ms = round(performance.now() - t1, 3);
  ort.env.logLevel = 'warning';
  const start = performance.now();
  let sess;
  try {
    sess = await ort.InferenceSession.create(model, { executionProviders: eps, logSeverityLevel: 3 });
  } catch (e) {
    return { obs: { ...obs, load_error: message(e) }, timings };
  }
  obs.session_create_ms = round(performance.now() - start, 3);
  // Creating the session with them is the evidence they registered; onnxruntime-web falls back to
  // wasm without a word where the browser has no WebGPU adapter, so that case registers wasm only.
  environment.providers_registered = adapter ? requested : [CPU_EP];
  console.log(RUNS_BEGIN); // what the console holds after it is the runs' (none at the default levels)

  const t2 = performance.now();
  for (const ds of manifest.test_data_sets) {
    try {
      const got = await run(sess, await readInputs(ort, manifest, ds.directory, bundleFile, readTensor), 'parity');
      obs.outputs[ds.directory] = await save(ds.directory, manifest, got);
    } catch (e) {
      obs.run_errors[ds.directory] = message(e);
    }
  }
  timings.parity_ms = round(performance.now() - t2, 3);

  const tb = performance.now();
  const sizes = [...cfg.batchSizes].sort((a, b) => a - b);
  const saved = (dir, got) => save(dir, manifest, got);
  const onCpu = async (feeds, phase) => {
    const cpu = {};
    for (const [k, v] of Object.entries(await run(sess, feeds, phase))) cpu[k] = await cpuData(v);
    return cpu;
  };
  const { samples, working } = await batchRuns(ort, manifest, bundleFile, readTensor, onCpu, saved, sizes, obs);
  timings.batch_ms = round(performance.now() - tb, 3);
  const t3 = performance.now();
  obs.latency = [];
  const timed = (feeds, phase) => run(sess, feeds, phase);
  for (const n of working) obs.latency.push(await latency(timed, rows(ort, samples, range(n)), n, cfg.latencyRuns));
  timings.latency_ms = round(performance.now() - t3, 3);
  const t4 = performance.now();
  if (working.length) {
    const [mb, why] = await memory();
    if (mb === null) obs.unmeasured.memory = why;
    else {
      obs.peak_rss_mb = mb;
      obs.memory_threads = 1;
      obs.notes.push('memory is the page\'s (measureUserAgentSpecificMemory after the largest batch; wasm memory only grows, so it bounds the wasm peak), not the browser process RSS');
    }
  }
  timings.memory_ms = round(performance.now() - t4, 3);
  const t5 = performance.now(); // after the memory figure, as the other observers do
  await sweepPoints(ort, manifest, bundleFile, readTensor, timed, saved, cfg.latencyRuns, obs);
  timings.sweep_ms = round(performance.now() - t5, 3);
  timings.session_create_ms = obs.session_create_ms;
  timings.runs = RUNS;
  await sess.release?.();
  return { obs, timings };
}

try {
  const cfg = JSON.parse(new TextDecoder().decode(await fetchBytes('config.json')));
  const { obs, timings } = await observe(cfg);
  await post('timings', JSON.stringify(timings));
  await post('observation', JSON.stringify(obs));
} catch (e) {
  await post('fatal', message(e)).catch(() => {});
  throw e;
}
