// The onnxruntime-node runner: observe one bundle on one target, draw no verdict.
//
// node observe.mjs --module DIR --bundle B --target-id ID --ep cpu --ep-names cpu=CPUExecutionProvider,...
//   --out OBSDIR [--batch-sizes 1,8] [--latency-runs N] [--memory-threads N]
// --ep is the provider's providers.toml key (onnxruntime-node's backend name); --ep-names, from
// providers.toml through the host, what onnxruntime registers each key under: no table lives here.
// writes OBSDIR/observation.json (the Observation contract of ci_onnx/contracts/results.py), every observed
// output as a TensorProto file, and the profile trace of the parity runs as node_profile.json; where a
// release writes no trace (1.20 ignores enableProfiling), the verbose log of a session created in a
// child as verbose.log. The Python side turns either into a Placement, with the code every runner shares.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { batchRuns, latency, message, range, readInputs, round, rows, sweepPoints } from './common.mjs';
import { readTensor, writeTensor } from './tensorproto.mjs';

function parseArgs(argv) {
  const args = { latencyRuns: 20, memoryThreads: 4, batchSizes: [], epNames: {} };
  for (let i = 0; i < argv.length; i += 2) {
    const [k, v] = [argv[i], argv[i + 1]];
    if (k === '--module') args.module = v;
    else if (k === '--bundle') args.bundle = v;
    else if (k === '--target-id') args.targetId = v;
    else if (k === '--ep') args.ep = v;
    else if (k === '--ep-names') args.epNames = Object.fromEntries(v.split(',').map((kv) => kv.split('=')));
    else if (k === '--out') args.out = v;
    else if (k === '--latency-runs') args.latencyRuns = Number(v);
    else if (k === '--memory-threads') args.memoryThreads = Number(v);
    else if (k === '--batch-sizes') args.batchSizes = v ? v.split(',').map(Number) : [];
    else throw new Error(`unknown argument ${k}`);
  }
  return args;
}

function save(out, dir, manifest, got) {
  fs.mkdirSync(path.join(out, dir), { recursive: true });
  const files = {};
  manifest.outputs.forEach((spec, i) => {
    const t = got[spec.name];
    if (!t) return;
    const rel = `${dir}/output_${i}.pb`;
    fs.writeFileSync(path.join(out, rel), writeTensor({ name: spec.name, type: t.type, dims: t.dims, data: t.data }));
    files[spec.name] = rel;
  });
  return files;
}

// The "Node placements" lines onnxruntime's C++ logger writes to stderr while a session is created at
// verbose level: only a child's stderr can be read, so a child creates that session.
function verboseLog(args) {
  const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--placement-log', args.module,
    path.join(args.bundle, 'model.onnx'), args.ep], { encoding: 'utf8', maxBuffer: 1 << 28, timeout: 300000 });
  if (child.status !== 0 || !child.stderr.includes('VerifyEachNodeIsAssignedToAnEp')) return false;
  fs.writeFileSync(path.join(args.out, 'verbose.log'), child.stderr);
  return true;
}

async function placementLog([module, model, ep]) {
  const ort = createRequire(import.meta.url)(module);
  ort.env.logLevel = 'verbose';
  const providers = ep === 'cpu' ? ['cpu'] : [ep, 'cpu'];
  await ort.InferenceSession.create(model, { executionProviders: providers, logSeverityLevel: 0, logVerbosityLevel: 0 });
}

async function observe(args) {
  const require = createRequire(import.meta.url);
  const ort = require(args.module);
  const version = JSON.parse(fs.readFileSync(path.join(args.module, 'package.json'), 'utf8')).version;
  const manifest = JSON.parse(fs.readFileSync(path.join(args.bundle, 'manifest.json'), 'utf8'));
  const bundleFile = (rel) => fs.readFileSync(path.join(args.bundle, rel));
  const available = (ort.listSupportedBackends?.() ?? [{ name: 'cpu', bundled: true }])
    .filter((b) => b.bundled).map((b) => args.epNames[b.name] ?? b.name);
  const epName = args.epNames[args.ep] ?? args.ep;
  const requested = args.ep === 'cpu' ? [epName] : [epName, args.epNames.cpu];
  const environment = {
    runtime_version: version, providers_available: available, providers_registered: [],
    platform: `${os.type()}-${os.release()}-${process.arch}-node${process.versions.node}`,
    runner: 'ort-node', runner_version: version,
  };
  const obs = {
    schema_version: 1, target_id: args.targetId, environment, providers_requested: requested,
    outputs: {}, run_errors: {}, batch_outputs: {}, batch_errors: {}, batch_reference: {}, notes: [],
    unmeasured: {}, // the cold start it does not time: runners.toml's can.cold_start, said by collect
  };
  const profilePrefix = path.join(args.out, 'profile');
  const options = {
    executionProviders: args.ep === 'cpu' ? ['cpu'] : [args.ep, 'cpu'],
    enableProfiling: true, profileFilePrefix: profilePrefix, logSeverityLevel: 3,
  };
  const start = performance.now();
  let sess;
  try {
    sess = await ort.InferenceSession.create(path.join(args.bundle, 'model.onnx'), options);
  } catch (e) {
    return { ...obs, load_error: message(e) };
  }
  obs.session_create_ms = round(performance.now() - start, 3);
  // onnxruntime-node does not say which providers a session registered: creating it with them is
  // the evidence that they were (an unavailable one is an error at creation).
  // A release whose package does not bundle the EP may still create the session, on the CPU alone.
  environment.providers_registered = requested.filter((p) => available.includes(p));

  for (const ds of manifest.test_data_sets) {
    try {
      const got = await sess.run(await readInputs(ort, manifest, ds.directory, bundleFile, readTensor));
      obs.outputs[ds.directory] = save(args.out, ds.directory, manifest, got);
    } catch (e) {
      obs.run_errors[ds.directory] = message(e);
    }
  }
  sess.endProfiling(); // returns nothing: the trace is the file whose name starts with the prefix
  const trace = fs.readdirSync(args.out).find((f) => f.startsWith('profile') && f.endsWith('.json'));
  if (trace) fs.renameSync(path.join(args.out, trace), path.join(args.out, 'node_profile.json'));
  else if (!verboseLog(args)) obs.unmeasured.placement = 'onnxruntime-node wrote no profile trace and no verbose log';

  const sizes = [...args.batchSizes].sort((a, b) => a - b);
  const saved = (dir, got) => save(args.out, dir, manifest, got);
  const timed = (feeds) => sess.run(feeds);
  const { samples, working } = await batchRuns(ort, manifest, bundleFile, readTensor, timed, saved, sizes, obs);
  obs.latency = [];
  for (const n of working) obs.latency.push(await latency(timed, rows(ort, samples, range(n)), n, args.latencyRuns));
  if (working.length) {
    const largest = rows(ort, samples, range(Math.max(...working)));
    obs.rss_before_mb = round(process.memoryUsage().rss / 2 ** 20, 2);
    const each = Math.max(2, Math.floor(args.latencyRuns / 4));
    await Promise.all(range(args.memoryThreads).map(async () => {
      for (let i = 0; i < each; i++) await sess.run(largest);
    }));
    obs.peak_rss_mb = round(process.resourceUsage().maxRSS / 1024, 2);
    obs.memory_threads = args.memoryThreads;
    obs.notes.push('peak RSS is the process lifetime peak (process.resourceUsage().maxRSS), an upper bound');
  }
  await sweepPoints(ort, manifest, bundleFile, readTensor, timed, saved, args.latencyRuns, obs); // after the memory figure, as the python runner does
  await sess.release?.();
  return obs;
}

if (process.argv[2] === '--placement-log') {
  await placementLog(process.argv.slice(3));
} else {
  const args = parseArgs(process.argv.slice(2));
  fs.mkdirSync(args.out, { recursive: true });
  const obs = await observe(args);
  fs.writeFileSync(path.join(args.out, 'observation.json'), `${JSON.stringify(obs, null, 2)}\n`);
}
