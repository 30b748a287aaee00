/* TensorProto decoder and encoder: see tensorproto.h. */
#define _POSIX_C_SOURCE 200809L
#include "tensorproto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F_DIMS 1
#define F_DATA_TYPE 2
#define F_FLOAT 4
#define F_INT32 5
#define F_STRING 6
#define F_INT64 7
#define F_NAME 8
#define F_RAW 9
#define F_DOUBLE 10
#define F_UINT64 11
#define F_EXTERNAL 13
#define F_LOCATION 14
#define W_VARINT 0
#define W_I64 1
#define W_LEN 2
#define W_I32 5
#define MAX_ELEMENTS ((uint64_t)1 << 34) /* more than any test file holds: a larger shape is a lie */

int tp_bits(int32_t t) {
    switch (t) {
    case TP_FLOAT: case TP_INT32: case TP_UINT32: return 32;
    case TP_UINT8: case TP_INT8: case TP_BOOL: case TP_FLOAT8E4M3FN: case TP_FLOAT8E4M3FNUZ:
    case TP_FLOAT8E5M2: case TP_FLOAT8E5M2FNUZ: case TP_FLOAT8E8M0: return 8;
    case TP_UINT16: case TP_INT16: case TP_FLOAT16: case TP_BFLOAT16: return 16;
    case TP_INT64: case TP_DOUBLE: case TP_UINT64: case TP_COMPLEX64: return 64;
    case TP_COMPLEX128: return 128;
    case TP_UINT4: case TP_INT4: case TP_FLOAT4E2M1: return 4;
    case TP_UINT2: case TP_INT2: return 2;
    default: return 0;
    }
}

size_t tp_raw_size(int32_t t, size_t count) {
    size_t bits = (size_t)tp_bits(t);
    return bits >= 8 ? count * (bits / 8) : (count * bits + 7) / 8;
}

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Reads a varint at *pos: 0, or -1 with the reason in err. */
static int read_varint(const unsigned char *buf, size_t len, size_t *pos, uint64_t *out, char *err,
                       size_t errlen) {
    uint64_t result = 0;
    unsigned shift = 0;
    for (;;) {
        if (*pos >= len) return fail(err, errlen, "truncated varint");
        unsigned char byte = buf[(*pos)++];
        if (shift == 63 && (byte & 0x7F) > 1 && !(byte & 0x80)) return fail(err, errlen, "varint over 64 bits");
        if (shift < 64) result |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) {
            *out = result;
            return 0;
        }
        shift += 7;
        if (shift > 63) return fail(err, errlen, "varint too long");
    }
}

typedef struct {
    unsigned char *data;
    size_t len, cap;
} buffer;

static int put(buffer *b, const void *src, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n) cap *= 2;
        unsigned char *grown = realloc(b->data, cap);
        if (!grown) return -1;
        b->data = grown;
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->len, src, n);
    b->len += n;
    return 0;
}

static int put_varint(buffer *b, uint64_t v) {
    unsigned char tmp[10];
    size_t n = 0;
    do {
        unsigned char byte = v & 0x7F;
        v >>= 7;
        tmp[n++] = v ? (unsigned char)(byte | 0x80) : byte;
    } while (v);
    return put(b, tmp, n);
}

/* Values of one repeated integer field: each a varint, or packed varints in a chunk. */
static int ints_of(buffer *vals, int wire, const unsigned char *chunk, size_t clen, uint64_t value, char *err,
                   size_t errlen) {
    if (wire == W_VARINT) return put(vals, &value, sizeof value) ? fail(err, errlen, "out of memory") : 0;
    size_t pos = 0;
    while (pos < clen) {
        uint64_t v;
        if (read_varint(chunk, clen, &pos, &v, err, errlen)) return -1;
        if (put(vals, &v, sizeof v)) return fail(err, errlen, "out of memory");
    }
    return 0;
}

static int valid_utf8(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t extra;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0) extra = 1, cp = c & 0x1Fu;
        else if ((c & 0xF0) == 0xE0) extra = 2, cp = c & 0x0Fu;
        else if ((c & 0xF8) == 0xF0) extra = 3, cp = c & 0x07u;
        else return 0;
        if (i + extra >= n) return 0;
        for (size_t k = 1; k <= extra; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + k] & 0x3Fu);
        }
        static const uint32_t least[4] = {0, 0x80, 0x800, 0x10000};
        if (cp < least[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += extra + 1;
    }
    return 1;
}

static void zero_padding(unsigned char *data, size_t count, int bits) {
    size_t used = count * (size_t)bits;
    if (used % 8) data[used / 8] &= (unsigned char)((1u << (used % 8)) - 1);
}

void tp_free(tp_tensor *t) {
    free(t->name);
    free(t->data);
    if (t->strings)
        for (size_t i = 0; i < t->count; i++) free(t->strings[i]);
    free(t->strings);
    free(t->string_lengths);
    memset(t, 0, sizeof *t);
}

typedef struct {
    const unsigned char *p;
    size_t n;
} slice;

/* The wire types a field of TensorProto may come in (a bit per wire type), 0 for fields not read:
 * a known field in another wire type is no TensorProto, as protobuf's own parsers say. */
static int wire_of(uint64_t field) {
    switch (field) {
    case F_DIMS: case F_INT32: case F_INT64: case F_UINT64: return 1 << W_VARINT | 1 << W_LEN;
    case F_DATA_TYPE: case F_LOCATION: return 1 << W_VARINT;
    case F_STRING: case F_NAME: case F_RAW: case F_EXTERNAL: return 1 << W_LEN;
    case F_FLOAT: return 1 << W_I32 | 1 << W_LEN;
    case F_DOUBLE: return 1 << W_I64 | 1 << W_LEN;
    default: return 0;
    }
}

int tp_decode(const unsigned char *buf, size_t len, tp_tensor *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    buffer dims = {0}, i32 = {0}, i64 = {0}, u64 = {0}, f32 = {0}, f64 = {0}, strs = {0};
    slice name = {NULL, 0}, raw = {NULL, 0};
    int have_raw = 0, rc = -1;
    uint64_t code = 0;
    size_t pos = 0;
    while (pos < len) {
        uint64_t key, value = 0;
        if (read_varint(buf, len, &pos, &key, err, errlen)) goto done;
        uint64_t field = key >> 3;
        int wire = (int)(key & 7);
        const unsigned char *chunk = NULL;
        size_t clen = 0;
        if (wire == W_VARINT) {
            if (read_varint(buf, len, &pos, &value, err, errlen)) goto done;
        } else if (wire == W_LEN) {
            uint64_t n;
            if (read_varint(buf, len, &pos, &n, err, errlen)) goto done;
            if (n > len - pos) {
                fail(err, errlen, "truncated field");
                goto done;
            }
            chunk = buf + pos;
            clen = (size_t)n;
            pos += clen;
        } else if (wire == W_I64 || wire == W_I32) {
            size_t size = wire == W_I64 ? 8 : 4;
            if (size > len - pos) {
                fail(err, errlen, "truncated field");
                goto done;
            }
            chunk = buf + pos;
            clen = size;
            pos += size;
        } else {
            fail(err, errlen, "unsupported wire type %d (field %llu)", wire, (unsigned long long)field);
            goto done;
        }
        if (field == 0) {
            fail(err, errlen, "field number 0");
            goto done;
        }
        int want = wire_of(field);
        if (want && !(want & (1 << wire))) {
            fail(err, errlen, "field %llu has wire type %d, not one of its type", (unsigned long long)field, wire);
            goto done;
        }
        if (field == F_DIMS) {
            if (ints_of(&dims, wire, chunk, clen, value, err, errlen)) goto done;
        } else if (field == F_DATA_TYPE) {
            code = value;
        } else if (field == F_NAME) {
            name.p = chunk;
            name.n = clen;
        } else if (field == F_RAW) {
            raw.p = chunk;
            raw.n = clen;
            have_raw = 1;
        } else if (field == F_STRING) {
            slice s = {chunk, clen};
            if (put(&strs, &s, sizeof s)) goto oom;
        } else if (field == F_EXTERNAL || (field == F_LOCATION && value == 1)) {
            fail(err, errlen, "tensors with external data are not supported");
            goto done;
        } else if (field == F_FLOAT) {
            if (put(&f32, chunk, clen)) goto oom;
        } else if (field == F_DOUBLE) {
            if (put(&f64, chunk, clen)) goto oom;
        } else if (field == F_INT32) {
            if (ints_of(&i32, wire, chunk, clen, value, err, errlen)) goto done;
        } else if (field == F_INT64) {
            if (ints_of(&i64, wire, chunk, clen, value, err, errlen)) goto done;
        } else if (field == F_UINT64) {
            if (ints_of(&u64, wire, chunk, clen, value, err, errlen)) goto done;
        }
    }
    if (name.n && (!valid_utf8(name.p, name.n) || memchr(name.p, 0, name.n))) {
        fail(err, errlen, "%s", memchr(name.p, 0, name.n) ? "the tensor's name holds a NUL byte"
                                                          : "the tensor's name is not UTF-8");
        goto done;
    }
    out->name = malloc(name.n + 1);
    if (!out->name) goto oom;
    if (name.n) memcpy(out->name, name.p, name.n);
    out->name[name.n] = '\0';
    const char *what = name.n ? out->name : "tensor";
    size_t ndim = dims.len / sizeof(uint64_t);
    if (ndim > TP_MAX_DIMS) {
        fail(err, errlen, "%s: %zu dimensions, more than %d", what, ndim, TP_MAX_DIMS);
        goto done;
    }
    /* Every product checked before it is formed: the elements of the non-zero dims (a zero dim makes
     * the tensor empty, but a dim no tensor can have is still a lie), then the bytes they take, both
     * in 64 bits and then against the bytes present, before anything is allocated. */
    uint64_t count = 1;
    int empty = 0;
    for (size_t i = 0; i < ndim; i++) {
        int64_t d = (int64_t)((uint64_t *)dims.data)[i];
        if (d < 0) {
            fail(err, errlen, "%s: negative dimension %lld", what, (long long)d);
            goto done;
        }
        out->dims[i] = d;
        if (d == 0) {
            empty = 1;
            continue;
        }
        if ((uint64_t)d > MAX_ELEMENTS / count) {
            fail(err, errlen, "%s: its shape claims more than %llu elements", what, (unsigned long long)MAX_ELEMENTS);
            goto done;
        }
        count *= (uint64_t)d;
    }
    if (empty) count = 0;
    out->ndim = ndim;
    if (code > 1000) code = 1000;
    out->data_type = (int32_t)code;
    int t = out->data_type;
    if (t == TP_STRING) {
        size_t n = strs.len / sizeof(slice);
        if ((uint64_t)n != count) {
            fail(err, errlen, "%s: %zu values for %llu elements", what, n, (unsigned long long)count);
            goto done;
        }
        out->count = n;
        out->strings = calloc(n ? n : 1, sizeof(char *));
        out->string_lengths = calloc(n ? n : 1, sizeof(size_t));
        if (!out->strings || !out->string_lengths) goto oom;
        for (size_t i = 0; i < n; i++) {
            slice s = ((slice *)strs.data)[i];
            if (!valid_utf8(s.p, s.n)) {
                fail(err, errlen, "%s: a string element is not UTF-8", what);
                goto done;
            }
            out->strings[i] = malloc(s.n + 1);
            if (!out->strings[i]) goto oom;
            if (s.n) memcpy(out->strings[i], s.p, s.n);
            out->strings[i][s.n] = '\0';
            out->string_lengths[i] = s.n;
        }
        rc = 0;
        goto done;
    }
    int bits = tp_bits(t);
    if (!bits) {
        fail(err, errlen, "%s: TensorProto data type %llu is not an ONNX element type", what, (unsigned long long)code);
        goto done;
    }
    /* count <= 2^34 and bits <= 128: the byte count fits in 64 bits. */
    uint64_t need = bits >= 8 ? count * (uint64_t)(bits / 8) : (count * (uint64_t)bits + 7) / 8;
    /* How many elements the typed fields hold (an element of a complex type is two values). */
    uint64_t got = 0;
    buffer *src = NULL;
    if (have_raw) {
        if ((uint64_t)raw.n != need) {
            fail(err, errlen, "%s: %zu raw bytes for %llu elements of %d bits", what, raw.n,
                 (unsigned long long)count, bits);
            goto done;
        }
        got = count;
    } else if (t == TP_FLOAT || t == TP_COMPLEX64 || t == TP_DOUBLE || t == TP_COMPLEX128) {
        src = (t == TP_FLOAT || t == TP_COMPLEX64) ? &f32 : &f64;
        size_t size = (t == TP_FLOAT || t == TP_COMPLEX64) ? 4 : 8;
        size_t arity = (t == TP_COMPLEX64 || t == TP_COMPLEX128) ? 2 : 1;
        if (src->len % size) {
            fail(err, errlen, "%s: %zu bytes of packed %zu-byte values", what, src->len, size);
            goto done;
        }
        if ((src->len / size) % arity) {
            fail(err, errlen, "%s: %zu values, not an even number for complex elements", what, src->len / size);
            goto done;
        }
        got = src->len / size / arity;
    } else if (t == TP_INT64 || t == TP_UINT32 || t == TP_UINT64) {
        src = t == TP_INT64 ? &i64 : &u64;
        got = src->len / sizeof(uint64_t);
    } else {
        /* int32_data: one element a value, or 8/bits elements a value for the 4- and 2-bit types. */
        src = &i32;
        uint64_t n = src->len / sizeof(uint64_t);
        if (bits < 8) got = n * (uint64_t)(8 / bits) < count ? n * (uint64_t)(8 / bits) : count;
        else got = n;
    }
    if (got != count) {
        fail(err, errlen, "%s: %llu values for %llu elements", what, (unsigned long long)got,
             (unsigned long long)count);
        goto done;
    }
    /* The values are present, so count and need are bounded by len and fit in size_t. */
    out->count = (size_t)count;
    out->nbytes = (size_t)need;
    out->data = calloc(out->nbytes ? out->nbytes : 1, 1);
    if (!out->data) goto oom;
    if (have_raw) {
        if (raw.n) memcpy(out->data, raw.p, raw.n);
        if (bits < 8) zero_padding(out->data, out->count, bits);
    } else if (t == TP_FLOAT || t == TP_COMPLEX64 || t == TP_DOUBLE || t == TP_COMPLEX128) {
        if (out->nbytes) memcpy(out->data, src->data, out->nbytes);
    } else if (t == TP_INT64 || t == TP_UINT32 || t == TP_UINT64) {
        for (size_t i = 0; i < out->count; i++) {
            uint64_t v = ((uint64_t *)src->data)[i];
            if (t == TP_UINT32) {
                uint32_t w = (uint32_t)v;
                memcpy(out->data + 4 * i, &w, 4);
            } else {
                memcpy(out->data + 8 * i, &v, 8);
            }
        }
    } else {
        const uint64_t *v = (const uint64_t *)src->data;
        if (bits < 8) {
            for (size_t i = 0; i < out->nbytes; i++) out->data[i] = (unsigned char)v[i];
            zero_padding(out->data, out->count, bits);
        } else {
            for (size_t i = 0; i < out->count; i++) {
                uint32_t w = (uint32_t)v[i];
                if (t == TP_INT32) memcpy(out->data + 4 * i, &w, 4);
                else if (bits == 16) {
                    uint16_t h = (uint16_t)w;
                    memcpy(out->data + 2 * i, &h, 2);
                } else if (t == TP_BOOL) out->data[i] = w != 0;
                else out->data[i] = (unsigned char)w;
            }
        }
    }
    rc = 0;
    goto done;
oom:
    fail(err, errlen, "out of memory");
done:
    free(dims.data);
    free(i32.data);
    free(i64.data);
    free(u64.data);
    free(f32.data);
    free(f64.data);
    free(strs.data);
    if (rc) tp_free(out);
    return rc;
}

static int put_len_field(buffer *b, unsigned field, const void *p, size_t n) {
    return put_varint(b, (field << 3) | W_LEN) || put_varint(b, n) || put(b, p, n);
}

int tp_encode(const tp_tensor *t, unsigned char **out, size_t *len) {
    buffer b = {0};
    int bad = 0;
    for (size_t i = 0; i < t->ndim; i++) bad |= put_varint(&b, F_DIMS << 3) || put_varint(&b, (uint64_t)t->dims[i]);
    bad |= put_varint(&b, F_DATA_TYPE << 3) || put_varint(&b, (uint64_t)(int64_t)t->data_type);
    if (t->name && t->name[0]) bad |= put_len_field(&b, F_NAME, t->name, strlen(t->name));
    if (t->data_type == TP_STRING) {
        for (size_t i = 0; i < t->count; i++) bad |= put_len_field(&b, F_STRING, t->strings[i], t->string_lengths[i]);
    } else {
        bad |= put_len_field(&b, F_RAW, t->data, t->nbytes);
    }
    if (bad) {
        free(b.data);
        return -1;
    }
    if (!b.data) b.data = malloc(1);
    *out = b.data;
    *len = b.len;
    return 0;
}

int tp_load(const char *path, tp_tensor *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return fail(err, errlen, "%s: %s", path, strerror(errno));
    buffer b = {0};
    unsigned char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (put(&b, chunk, n)) {
            fclose(f);
            free(b.data);
            return fail(err, errlen, "%s: out of memory", path);
        }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(b.data);
        return fail(err, errlen, "%s: read error", path);
    }
    char why[512];
    int rc = tp_decode(b.data ? b.data : (const unsigned char *)"", b.len, out, why, sizeof why);
    free(b.data);
    if (rc) return fail(err, errlen, "%s: not a TensorProto (%s)", path, why);
    return 0;
}

int tp_save(const char *path, const tp_tensor *t, char *err, size_t errlen) {
    unsigned char *buf;
    size_t len;
    if (tp_encode(t, &buf, &len)) return fail(err, errlen, "%s: out of memory", path);
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(buf);
        return fail(err, errlen, "%s: %s", path, strerror(errno));
    }
    size_t w = fwrite(buf, 1, len, f);
    free(buf);
    if (fclose(f) || w != len) return fail(err, errlen, "%s: write failed", path);
    return 0;
}

#ifdef ONNX_GATE_TENSORPROTO_MAIN
/* A test driver: decode IN and encode it to OUT (what the observer does to every file it touches). */
int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: tensorproto IN.pb OUT.pb\n");
        return 2;
    }
    tp_tensor t;
    char err[1024];
    if (tp_load(argv[1], &t, err, sizeof err) || tp_save(argv[2], &t, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        tp_free(&t);
        return 1;
    }
    tp_free(&t);
    return 0;
}
#endif
