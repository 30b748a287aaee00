// The node runner's TensorProto codec over a corpus of records (tests/robustness/sanitized.py's
// format: a 4-byte little-endian length, one byte of kind, the bytes; only 'T' records are read):
// one line per record, `1 HEX` (accepted; HEX is what the codec writes back) or `0 NAME: REASON`
// with NAME the error's class. Last line: `maxrss KB` of this process. With --digest, HEX is the
// sha256 of what it writes back (a large file's measure is then the codec's, not the printing's).
import crypto from 'node:crypto';
import fs from 'node:fs';
import { readTensor, writeTensor } from '../../ci_onnx/runners/node/tensorproto.mjs';

const all = fs.readFileSync(process.argv[2]);
const digest = process.argv[3] === '--digest';
const show = (bytes) => (digest ? crypto.createHash('sha256').update(bytes).digest('hex') : bytes.toString('hex'));
const lines = [];
for (let p = 0; p + 5 <= all.length;) {
  const n = all.readUInt32LE(p);
  const kind = String.fromCharCode(all[p + 4]);
  const data = all.subarray(p + 5, p + 5 + n);
  p += 5 + n;
  if (kind !== 'T') continue;
  try {
    lines.push(`1 ${show(writeTensor(readTensor(data)))}`);
  } catch (e) {
    lines.push(`0 ${e?.name}: ${String(e?.message).replace(/[\r\n]/g, ' ')}`);
  }
}
lines.push(`maxrss ${process.resourceUsage().maxRSS}`);
process.stdout.write(`${lines.join('\n')}\n`);
