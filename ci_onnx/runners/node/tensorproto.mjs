// ONNX TensorProto files, read and written with no dependency: the protobuf wire format of the few
// fields a tensor needs. Writes what ci_onnx/tensorproto.py writes (dims, data_type, name, raw_data or
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

function readVarint(buf, pos) {
  let value = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new Error('truncated varint');
    const b = buf[pos++];
    value |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return [value, pos];
    shift += 7n;
    if (shift > 63n) throw new Error('varint longer than 10 bytes');
  }
}

function fields(buf) {
  const out = [];
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) {
      let v;
      [v, pos] = readVarint(buf, pos);
      out.push([field, wire, v]);
    } else if (wire === 2) {
      let len;
      [len, pos] = readVarint(buf, pos);
      const end = pos + Number(len);
      if (end > buf.length) throw new Error('truncated field');
      out.push([field, wire, Buffer.from(buf.subarray(pos, end))]); // a copy, never a view
      pos = end;
    } else if (wire === 5 || wire === 1) {
      const n = wire === 5 ? 4 : 8;
      if (pos + n > buf.length) throw new Error('truncated field');
      out.push([field, wire, Buffer.from(buf.subarray(pos, pos + n))]);
      pos += n;
    } else {
      throw new Error(`unsupported wire type ${wire}`);
    }
  }
  return out;
}

function varints(bytes) {
  const vals = [];
  let pos = 0;
  while (pos < bytes.length) {
    let v;
    [v, pos] = readVarint(bytes, pos);
    vals.push(v);
  }
  return vals;
}

const signed64 = (v) => BigInt.asIntN(64, v);

/** Decode a TensorProto: {name, dataType, type, dims, data} with data an onnxruntime-node array. */
export function readTensor(bytes) {
  const buf = Buffer.from(bytes);
  const dims = [];
  let dataType = 0;
  let name = '';
  let raw = null;
  const strings = [];
  const typed = {};
  for (const [field, wire, v] of fields(buf)) {
    if (field === DIMS) {
      for (const d of wire === 2 ? varints(v) : [v]) dims.push(Number(signed64(d)));
    } else if (field === DATA_TYPE) dataType = Number(v);
    else if (field === NAME) name = v.toString('utf8');
    else if (field === RAW) raw = v;
    else if (field === STRING) strings.push(v.toString('utf8'));
    else if (field === EXTERNAL) throw new Error('external data in a test file is not supported');
    else if ([FLOAT, INT32, INT64, DOUBLE, UINT64].includes(field)) (typed[field] ??= []).push([wire, v]);
  }
  const info = TYPES[dataType];
  if (!info) throw new Error(`TensorProto data type ${dataType} is not one onnxruntime-node accepts`);
  const [type, Arr, size] = info;
  const count = dims.reduce((a, b) => a * b, 1);
  let data;
  if (type === 'string') {
    data = strings;
  } else if (raw !== null) {
    if (raw.length !== count * size) throw new Error(`raw_data holds ${raw.length} bytes, not ${count * size}`);
    const copy = new ArrayBuffer(raw.length);
    new Uint8Array(copy).set(raw);
    data = new Arr(copy);
  } else {
    data = fromTyped(dataType, Arr, typed);
  }
  if (data.length !== count) throw new Error(`the tensor holds ${data.length} elements, its dims say ${count}`);
  return { name, dataType, type, dims, data };
}

function fromTyped(code, Arr, typed) {
  const out = [];
  const push = (field, decode) => {
    for (const [wire, v] of typed[field] ?? []) {
      if (wire === 2 && (field === FLOAT || field === DOUBLE)) {
        const n = field === FLOAT ? 4 : 8;
        for (let i = 0; i < v.length; i += n) out.push(field === FLOAT ? v.readFloatLE(i) : v.readDoubleLE(i));
      } else if (wire === 2) for (const x of varints(v)) out.push(decode(x));
      else if (wire === 5) out.push(v.readFloatLE(0));
      else if (wire === 1) out.push(v.readDoubleLE(0));
      else out.push(decode(v));
    }
  };
  if (code === 1) push(FLOAT);
  else if (code === 11) push(DOUBLE);
  else if (code === 7) push(INT64, (x) => signed64(x));
  else if (code === 13) push(UINT64, (x) => BigInt.asUintN(64, x));
  else if (code === 12) push(UINT64, (x) => Number(BigInt.asUintN(32, x)));
  else push(INT32, (x) => Number(BigInt.asIntN(32, x)));
  return Arr.from(out);
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

/** Encode {name, type or dataType, dims, data} as ci_onnx/tensorproto.py's dumps does. */
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
