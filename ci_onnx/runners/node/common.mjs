// What the node observer (observe.mjs) and the web page (web/page.mjs) share: reading a bundle's
// inputs, the rows of a batch, the stacked single-sample reference, the latency figures, and the
// bundle's sweep points. The page
// loads it from the driver's server (/codec/common.mjs), the node observer from this folder; each
// passes how it reads a bundle file and how it runs a session, nothing else differs.

export const WARMUP_RUNS = 3;
// ci_onnx/observer/measure.py's SWEEP_BUDGET_MS and sweep_runs: the same rule in every observer.
export const SWEEP_BUDGET_MS = 2000;

export function sweepRuns(firstMs, runs) {
  const timed = Math.max(1, Math.min(runs, Math.floor(SWEEP_BUDGET_MS / Math.max(firstMs, 1e-3))));
  return [Math.min(WARMUP_RUNS, timed - 1), timed];
}

export const message = (e) => String(e?.message ?? e).split(/\s+/).join(' ').slice(0, 2000) || 'Error';
export const round = (x, digits) => Math.round(x * 10 ** digits) / 10 ** digits;
export const range = (n) => Array.from({ length: n }, (_, i) => i);

// The inputs of test data set `dir` as ort.Tensors by name; `readBytes(rel)` reads a bundle file
// (synchronously or not).
export async function readInputs(ort, manifest, dir, readBytes, readTensor) {
  const feeds = {};
  for (const [i, spec] of manifest.inputs.entries()) {
    const t = readTensor(await readBytes(`${dir}/input_${i}.pb`));
    feeds[spec.name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  return feeds;
}

// Rows `indices` of every input along axis 0 (the batch axis: the Python side checked there is one).
export function rows(ort, feeds, indices) {
  const out = {};
  for (const [name, t] of Object.entries(feeds)) {
    const per = t.dims.slice(1).reduce((a, b) => a * b, 1);
    const n0 = t.dims[0];
    const data = new t.data.constructor(indices.length * per);
    indices.forEach((idx, j) => {
      const src = (idx % n0) * per;
      for (let k = 0; k < per; k++) data[j * per + k] = t.data[src + k];
    });
    out[name] = new ort.Tensor(t.type, data, [indices.length, ...t.dims.slice(1)]);
  }
  return out;
}

// Single-sample outputs stacked along axis 0: the reference a batched run is compared with.
export function stack(parts) {
  const first = parts[0];
  if (!first.dims.length) throw new Error('an output is not a tensor with a batch axis');
  const data = new first.data.constructor(parts.reduce((a, p) => a + p.data.length, 0));
  let at = 0;
  for (const p of parts) {
    data.set(p.data, at);
    at += p.data.length;
  }
  const n = parts.reduce((a, p) => a + p.dims[0], 0);
  return { type: first.type, dims: [n, ...first.dims.slice(1)], data };
}

export function percentile(sorted, p) {
  const rank = (p / 100) * (sorted.length - 1); // numpy's default (linear) interpolation
  const lo = Math.floor(rank);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

// p50/p90/p99 of `runs` timed runs of batch size `n` after WARMUP_RUNS; `run(feeds, phase)` runs the
// session once ('warmup' or 'latency').
export async function latency(run, feeds, n, runs, warmups = WARMUP_RUNS) {
  for (let i = 0; i < warmups; i++) await run(feeds, 'warmup');
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await run(feeds, 'latency');
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const [p50, p90, p99] = [50, 90, 99].map((p) => round(percentile(times, p), 4));
  return { batch_size: n, p50_ms: p50, p90_ms: p90, p99_ms: p99, runs };
}

// The batch runs: the first test data set's rows one sample at a time (stacked, the reference each
// batch is compared with: batch_reference), then each of `sizes` (ascending) at once (batch_<n>);
// the runtime's message where one fails. Sets obs.batch_reference or batch_reference_error,
// batch_outputs and batch_errors; gives the rows and the sizes that ran, which are then timed.
// `run(feeds, phase)` runs the session once ('single', 'batch') and gives outputs on the CPU;
// `save(dir, outputs)` writes them, giving their files.
export async function batchRuns(ort, manifest, readBytes, readTensor, run, save, sizes, obs) {
  const working = [];
  if (!sizes.length || !manifest.test_data_sets.length) return { samples: null, working };
  const max = sizes[sizes.length - 1];
  let samples;
  try {
    const first = manifest.test_data_sets[0].directory;
    samples = rows(ort, await readInputs(ort, manifest, first, readBytes, readTensor), range(max));
  } catch (e) {
    obs.batch_reference_error = `reading the inputs failed: ${message(e)}`;
    return { samples: null, working };
  }
  try {
    const singles = [];
    for (const i of range(max)) singles.push(await run(rows(ort, samples, [i]), 'single'));
    const stacked = {};
    for (const name of Object.keys(singles[0])) stacked[name] = stack(singles.map((s) => s[name]));
    obs.batch_reference = await save('batch_reference', stacked);
  } catch (e) {
    obs.batch_reference_error = `single-sample runs failed: ${message(e)}`;
  }
  for (const n of sizes) {
    try {
      obs.batch_outputs[String(n)] = await save(`batch_${n}`, await run(rows(ort, samples, range(n)), 'batch'));
      working.push(n);
    } catch (e) {
      obs.batch_errors[String(n)] = message(e);
    }
  }
  return { samples, working };
}

// The bundle's sweep points (manifest.sweep_sets): each run once for its outputs (that first run at
// the shape timed alone), then timed like a batch size for as many runs as fit the budget (sweepRuns); the runtime's message where one fails. Sets
// obs.sweep_outputs, sweep_errors and sweep_latency. `run(feeds, phase)` runs the session once
// ('sweep', then latency's phases); `save(dir, outputs)` writes a point's outputs, giving their files.
export async function sweepPoints(ort, manifest, readBytes, readTensor, run, save, runs, obs) {
  const points = (manifest.sweep_sets ?? []).filter((sw) => sw.directory); // others: the judge says why
  if (!points.length) return;
  Object.assign(obs, { sweep_outputs: {}, sweep_errors: {}, sweep_latency: [] });
  for (const sw of points) {
    try {
      const feeds = await readInputs(ort, manifest, sw.directory, readBytes, readTensor);
      const t0 = performance.now();
      const got = await run(feeds, 'sweep');
      const first = performance.now() - t0;
      obs.sweep_outputs[sw.directory] = await save(sw.directory, got);
      const [warm, timed] = sweepRuns(first, runs);
      const stat = await latency(run, feeds, sw.count, timed, warm);
      obs.sweep_latency.push({ ...stat, point: `${sw.symbol}=${sw.size}`, first_ms: round(first, 4) });
    } catch (e) {
      obs.sweep_errors[sw.directory] = message(e);
    }
  }
}
