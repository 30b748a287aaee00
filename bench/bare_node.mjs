// The bare baseline of bench/bench_node.py: the node runner's work with nothing around it.
// One CPU session with profiling on for the parity runs (then ended), every data set run and compared
// elementwise (|got - ref| <= atol + rtol*|ref|) with its top-1 decisions, the first max(batch) samples
// one at a time and each batch size in one run, compared; 3 warm-up + N timed runs per batch size;
// 4 concurrent runs of the largest batch. Inputs and references are raw little-endian files prepared
// beforehand (spec.json), the cheapest reading there is; nothing is written.
//   node bare_node.mjs MODULE_DIR SPEC_JSON RUNS
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { createRequire } from 'node:module';

const [moduleDir, specPath, runsArg] = process.argv.slice(2);
const ort = createRequire(import.meta.url)(moduleDir);
const spec = JSON.parse(fs.readFileSync(specPath, 'utf8'));
const home = path.dirname(specPath);
const ARRAYS = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array };
const load = (f) => {
  const buf = fs.readFileSync(path.join(home, f.file));
  const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
  return new ort.Tensor(f.type, new ARRAYS[f.type](ab), f.dims);
};
const close = (got, ref) => {
  let bad = 0;
  for (let i = 0; i < ref.length; i++) if (!(Math.abs(got[i] - ref[i]) <= spec.atol + spec.rtol * Math.abs(ref[i]))) bad++;
  return bad;
};
const argmaxRows = (t) => {
  const per = t.dims[t.dims.length - 1];
  const out = [];
  for (let r = 0; r < t.data.length / per; r++) {
    let best = 0;
    for (let k = 1; k < per; k++) if (t.data[r * per + k] > t.data[r * per + best]) best = k;
    out.push(best);
  }
  return out;
};
const rows = (feeds, idx) => {
  const out = {};
  for (const [n, t] of Object.entries(feeds)) {
    const per = t.data.length / t.dims[0];
    const data = new t.data.constructor(idx.length * per);
    idx.forEach((i, j) => data.set(t.data.subarray((i % t.dims[0]) * per, (i % t.dims[0] + 1) * per), j * per));
    out[n] = new ort.Tensor(t.type, data, [idx.length, ...t.dims.slice(1)]);
  }
  return out;
};
const range = (n) => Array.from({ length: n }, (_, i) => i);

const prefix = path.join(os.tmpdir(), `bare-node-${process.pid}`);
const sess = await ort.InferenceSession.create(spec.model, { executionProviders: ['cpu'], enableProfiling: true, profileFilePrefix: prefix });
let bad = 0;
let changed = 0;
for (const ds of spec.data_sets) {
  const feeds = Object.fromEntries(ds.inputs.map((f) => [f.name, load(f)]));
  const got = await sess.run(feeds);
  for (const f of ds.outputs) {
    const ref = load(f);
    bad += close(got[f.name].data, ref.data);
    if (f.name === spec.decision) {
      const a = argmaxRows(got[f.name]);
      changed += argmaxRows(ref).filter((v, i) => v !== a[i]).length;
    }
  }
}
sess.endProfiling();
for (const f of fs.readdirSync(os.tmpdir()).filter((f) => f.startsWith(path.basename(prefix)))) {
  const events = JSON.parse(fs.readFileSync(path.join(os.tmpdir(), f), 'utf8'));
  const perProvider = {};
  for (const e of events) if (e.cat === 'Node' && e.args?.provider) perProvider[e.args.provider] = (perProvider[e.args.provider] ?? 0) + 1;
  fs.unlinkSync(path.join(os.tmpdir(), f));
}
const sizes = spec.batch_sizes;
if (sizes.length) {
  const first = Object.fromEntries(spec.data_sets[0].inputs.map((f) => [f.name, load(f)]));
  const samples = rows(first, range(Math.max(...sizes)));
  const singles = [];
  for (const i of range(Math.max(...sizes))) singles.push(await sess.run(rows(samples, [i])));
  for (const n of sizes) {
    const got = await sess.run(rows(samples, range(n)));
    for (const [name, t] of Object.entries(got)) {
      const per = t.data.length / n;
      for (let i = 0; i < n; i++) bad += close(t.data.subarray(i * per, (i + 1) * per), singles[i][name].data);
    }
  }
  const runs = Number(runsArg);
  for (const n of sizes) {
    const feeds = rows(samples, range(n));
    for (let i = 0; i < 3; i++) await sess.run(feeds);
    const times = [];
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      await sess.run(feeds);
      times.push(performance.now() - t0);
    }
  }
  const largest = rows(samples, range(Math.max(...sizes)));
  await Promise.all(range(4).map(async () => { for (let i = 0; i < Math.max(2, Math.floor(runs / 4)); i++) await sess.run(largest); }));
  process.resourceUsage().maxRSS;
}
if (bad || changed) {
  console.error(`bare node: ${bad} elements out of tolerance, ${changed} decisions changed`);
  process.exit(1);
}
