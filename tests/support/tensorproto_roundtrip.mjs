// Read every .pb in a directory with the node runner's codec and write it again into another one,
// so a test can compare the bytes with what the Python codec writes.
import fs from 'node:fs';
import path from 'node:path';
import { readTensor, writeTensor } from '../../ci_onnx/runners/node/tensorproto.mjs';

const [src, dst] = process.argv.slice(2);
fs.mkdirSync(dst, { recursive: true });
for (const name of fs.readdirSync(src).filter((f) => f.endsWith('.pb')).sort()) {
  const t = readTensor(fs.readFileSync(path.join(src, name)));
  fs.writeFileSync(path.join(dst, name), writeTensor(t));
}
