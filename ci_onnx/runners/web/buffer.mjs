// The few members of Node's Buffer that ../node/tensorproto.mjs uses, for the page: the browser has
// no Buffer, and the codec is the node runner's own, unchanged. A Uint8Array subclass, so subarray
// keeps the methods; from() always copies (the codec relies on copies, never views).

const enc = new TextEncoder();
const dec = new TextDecoder();

class PageBuffer extends Uint8Array {
  static from(value, encodingOrOffset, length) {
    if (typeof value === 'string') return PageBuffer.from(enc.encode(value));
    if (value instanceof ArrayBuffer) {
      const view = new Uint8Array(value, encodingOrOffset ?? 0, length ?? value.byteLength - (encodingOrOffset ?? 0));
      const out = new PageBuffer(view.length);
      out.set(view);
      return out;
    }
    const out = new PageBuffer(value.length);
    out.set(value);
    return out;
  }

  static concat(list) {
    const out = new PageBuffer(list.reduce((n, b) => n + b.length, 0));
    let at = 0;
    for (const b of list) {
      out.set(b, at);
      at += b.length;
    }
    return out;
  }

  toString(encoding = 'utf8') {
    if (encoding !== 'utf8') throw new Error(`PageBuffer decodes utf8 only, not ${encoding}`);
    return dec.decode(this);
  }

  readFloatLE(at) {
    return new DataView(this.buffer, this.byteOffset, this.byteLength).getFloat32(at, true);
  }

  readDoubleLE(at) {
    return new DataView(this.buffer, this.byteOffset, this.byteLength).getFloat64(at, true);
  }
}

globalThis.Buffer ??= PageBuffer;
