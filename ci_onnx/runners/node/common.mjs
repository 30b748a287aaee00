// What the node observer (observe.mjs) and the web page (web/page.mjs) share: reading a bundle's
// inputs, the rows of a batch, the stacked single-sample reference, and the latency figures. The page
// loads it from the driver's server (/codec/common.mjs), the node observer from this folder; each
// passes how it reads a bundle file and how it runs a session, nothing else differs.

export const WARMUP_RUNS = 3;

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
export async function latency(run, feeds, n, runs) {
  for (let i = 0; i < WARMUP_RUNS; i++) await run(feeds, 'warmup');
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
