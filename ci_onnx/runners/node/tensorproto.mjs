// ONNX TensorProto files, read and written with no dependency: the protobuf wire format of the few
// fields a tensor needs. Writes what ci_onnx/contracts/tensorproto.py writes (dims, data_type, name, raw_data or
// string_data, in field order), so both codecs produce the same bytes for the same tensor.

const DIMS = 1, DATA_TYPE = 2, FLOAT = 4, INT32 = 5, STRING = 6, INT64 = 7, NAME = 8, RAW = 9;
const DOUBLE = 10, UINT64 = 11, EXTERNAL = 13;

// TensorProto data type -> [onnxruntime-node tensor type, typed array, bytes per element].
export const TYPES = {
  1: ['float32', Float32Array, 4],
  2: ['uint8', Uint8Array, 1],
  3: ['int8', Int8Array, 1],
  4: ['uint16', Uint16Array, 2],
  5: ['int16', Int16Array, 2],
  6: ['int32', Int32Array, 4],
  7: ['int64', BigInt64Array, 8],
  8: ['string', null, 0],
  9: ['bool', Uint8Array, 1],
  10: ['float16', Uint16Array, 2],
  11: ['float64', Float64Array, 8],
  12: ['uint32', Uint32Array, 4],
  13: ['uint64', BigUint64Array, 8],
};
export const CODE_OF = Object.fromEntries(Object.entries(TYPES).map(([code, [t]]) => [t, Number(code)]));

// Any bytes that are not such a tensor throw TensorProtoError, never another error: the same files
// ci_onnx/contracts/tensorproto.py refuses, for the same reasons (every declared size checked against the bytes
// present before anything is allocated).
export class TensorProtoError extends Error {
  constructor(message) {
    super(message);
    this.name = 'TensorProtoError';
  }
}
const fail = (message) => {
  throw new TensorProtoError(message);
};
const MAX_ELEMENTS = 2 ** 34; // more than any test file holds: a larger claimed shape is a lie
// The wire types each field read may come in (ci_onnx/contracts/tensorproto.py _WIRES).
const WIRES = {
  [DIMS]: [0, 2], [DATA_TYPE]: [0], [FLOAT]: [5, 2], [INT32]: [0, 2], [STRING]: [2], [INT64]: [0, 2],
  [NAME]: [2], [RAW]: [2], [DOUBLE]: [1, 2], [UINT64]: [0, 2], [EXTERNAL]: [2], 14: [0],
};
const UTF8 = new TextDecoder('utf-8', { fatal: true });

// A varint as two 32-bit halves (no BigInt per value: a packed field holds millions).
function readHalves(buf, pos) {
  let lo = 0;
  let hi = 0;
  for (let i = 0; ; i++) {
    if (pos >= buf.length) fail('truncated varint');
    const b = buf[pos++];
    if (i < 4) lo |= (b & 0x7f) << (7 * i);
    else if (i === 4) {
      lo |= (b & 0x0f) << 28;
      hi = (b & 0x7f) >> 4;
    } else {
      if (i === 9 && b > 1) fail('varint over 64 bits');
      hi |= (b & 0x7f) << (7 * i - 32);
    }
    if (!(b & 0x80)) return [lo >>> 0, hi >>> 0, pos];
    if (i === 9) fail('varint too long');
  }
}

function readVarint(buf, pos) {
  const [lo, hi, next] = readHalves(buf, pos);
  return [(BigInt(hi) << 32n) | BigInt(lo), next];
}

function fields(buf) {
  const out = [];
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    let value;
    if (wire === 0) {
      [value, pos] = readVarint(buf, pos);
    } else if (wire === 2) {
      let len;
      [len, pos] = readVarint(buf, pos);
      if (len > BigInt(buf.length - pos)) fail('truncated field');
      value = buf.subarray(pos, pos + Number(len));
      pos += Number(len);
    } else if (wire === 5 || wire === 1) {
      const n = wire === 5 ? 4 : 8;
      if (pos + n > buf.length) fail('truncated field');
      value = buf.subarray(pos, pos + n);
      pos += n;
    } else {
      fail(`unsupported wire type ${wire} (field ${field})`);
    }
    if (field === 0) fail('field number 0');
    if (WIRES[field] && !WIRES[field].includes(wire)) fail(`field ${field} has wire type ${wire}, not one of its type`);
    out.push([field, wire, value]);
  }
  return out;
}

// The values of a packed varint field, each as [lo, hi] halves, checked before they are stored.
function eachVarint(bytes, fn) {
  let pos = 0;
  while (pos < bytes.length) {
    const [lo, hi, next] = readHalves(bytes, pos);
    fn(lo, hi);
    pos = next;
  }
}

function utf8(bytes, what) {
  try {
    return UTF8.decode(bytes);
  } catch {
    return fail(`${what} is not UTF-8`);
  }
}

/** Decode a TensorProto: {name, dataType, type, dims, data} with data an onnxruntime-node array. */
export function readTensor(bytes) {
  try {
    return decode(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes));
  } catch (e) {
    if (e instanceof TensorProtoError) throw e;
    throw new TensorProtoError(`unreadable TensorProto (${e?.name}: ${e?.message})`);
  }
}

function decode(buf) {
  const dims = [];
  let dataType = 0;
  let rawName = null;
  let raw = null;
  const strings = [];
  const typed = {};
  for (const [field, wire, v] of fields(buf)) {
    if (field === DIMS) {
      if (wire === 2) eachVarint(v, (lo, hi) => dims.push(hi >= 0x80000000 ? -1 : hi * 2 ** 32 + lo));
      else dims.push(v >= 1n << 63n ? -1 : Number(v));
    } else if (field === DATA_TYPE) dataType = v > 1000n ? 1000 : Number(v);
    else if (field === NAME) rawName = v;
    else if (field === RAW) raw = v;
    else if (field === STRING) strings.push(v);
    else if (field === EXTERNAL || (field === 14 && v === 1n)) fail('tensors with external data are not supported');
    else if ([FLOAT, INT32, INT64, DOUBLE, UINT64].includes(field)) (typed[field] ??= []).push([wire, v]);
  }
  const name = rawName === null ? '' : utf8(rawName, "the tensor's name");
  if (name.includes('\0')) fail("the tensor's name holds a NUL byte");
  const what = name || 'tensor';
  if (dims.some((d) => d < 0)) fail(`${what}: negative dimension in [${dims}]`);
  let nonzero = 1;
  for (const d of dims) if (d) nonzero *= d;
  if (nonzero > MAX_ELEMENTS) fail(`${what}: shape [${dims}] claims more than ${MAX_ELEMENTS} elements`);
  const count = dims.includes(0) ? 0 : nonzero;
  const info = TYPES[dataType];
  if (!info) fail(`${what}: TensorProto data type ${dataType} is not one onnxruntime-node accepts`);
  const [type, Arr, size] = info;
  let data;
  if (type === 'string') {
    if (strings.length !== count) fail(`${what}: ${strings.length} values for shape [${dims}]`);
    data = strings.map((s) => utf8(s, `${what}: a string element`));
  } else if (raw !== null) {
    if (raw.length !== count * size) fail(`${what}: ${raw.length} raw bytes for ${count} elements of ${size} bytes`);
    const copy = new ArrayBuffer(raw.length);
    new Uint8Array(copy).set(raw);
    data = new Arr(copy);
  } else {
    data = fromTyped(dataType, Arr, typed, count, what, dims);
  }
  return { name, dataType, type, dims, data };
}

// The typed fields onnx.proto keeps each data type's values in, counted before an array is made.
function fromTyped(code, Arr, typed, count, what, dims) {
  const field = { 1: FLOAT, 11: DOUBLE, 7: INT64, 13: UINT64, 12: UINT64 }[code] ?? INT32;
  const entries = typed[field] ?? [];
  const width = field === FLOAT ? 4 : field === DOUBLE ? 8 : 0;
  let n = 0;
  for (const [wire, v] of entries) {
    if (width) {
      if (v.length % width) fail(`${what}: ${v.length} bytes of packed ${width}-byte values`);
      n += v.length / width;
    } else if (wire === 2) {
      for (let i = 0; i < v.length; i++) if (!(v[i] & 0x80)) n++;
      if (v.length && v[v.length - 1] & 0x80) fail('truncated varint');
    } else n++;
  }
  if (n !== count) fail(`${what}: ${n} values for shape [${dims}]`);
  const out = new Arr(count);
  let at = 0;
  const view = (v) => new DataView(v.buffer, v.byteOffset, v.byteLength);
  const put = { 7: (lo, hi) => BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo)),
    13: (lo, hi) => (BigInt(hi) << 32n) | BigInt(lo), 12: (lo) => lo, 9: (lo) => (lo ? 1 : 0) }[code]
    ?? ((lo) => lo | 0);
  for (const [wire, v] of entries) {
    if (width) {
      const dv = view(v);
      for (let i = 0; i < v.length; i += width) out[at++] = width === 4 ? dv.getFloat32(i, true) : dv.getFloat64(i, true);
    } else if (wire === 2) eachVarint(v, (lo, hi) => { out[at++] = put(lo, hi); });
    else out[at++] = put(Number(v & 0xffffffffn), Number(v >> 32n));
  }
  return out;
}

function varint(value) {
  let v = BigInt.asUintN(64, BigInt(value));
  const bytes = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    bytes.push(b);
  } while (v);
  return Buffer.from(bytes);
}

const key = (field, wire) => varint((field << 3) | wire);
const lenField = (field, payload) => Buffer.concat([key(field, 2), varint(payload.length), payload]);

/** Encode {name, type or dataType, dims, data} as ci_onnx/contracts/tensorproto.py's dumps does. */
export function writeTensor({ name = '', type, dataType, dims, data }) {
  const code = dataType ?? CODE_OF[type];
  if (!TYPES[code]) throw new Error(`tensor type ${type ?? code} has no TensorProto data type here`);
  const parts = [];
  for (const d of dims) parts.push(key(DIMS, 0), varint(d));
  parts.push(key(DATA_TYPE, 0), varint(code));
  if (name) parts.push(lenField(NAME, Buffer.from(name, 'utf8')));
  if (code === 8) {
    for (const s of data) parts.push(lenField(STRING, Buffer.from(String(s), 'utf8')));
  } else {
    parts.push(lenField(RAW, Buffer.from(data.buffer, data.byteOffset, data.byteLength)));
  }
  return Buffer.concat(parts);
}
