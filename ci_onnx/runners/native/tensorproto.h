/* A TensorProto decoder and encoder of its own (C11, no protobuf library): the few fields a tensor
 * needs, read the way ci_onnx/contracts/tensorproto.py reads them and written the way it writes them (dims,
 * data_type, name, then raw_data, or string_data for strings), so both write identical bytes.
 *
 * In memory a tensor holds its elements in onnxruntime's layout, which is also TensorProto's
 * raw_data layout: little-endian, one byte per bool, float16/bfloat16 as 16-bit patterns, 4- and
 * 2-bit types packed low bits first. Strings are kept one buffer each.
 */
#ifndef ONNX_GATE_TENSORPROTO_H
#define ONNX_GATE_TENSORPROTO_H

#include <stddef.h>
#include <stdint.h>

enum {
    TP_FLOAT = 1, TP_UINT8 = 2, TP_INT8 = 3, TP_UINT16 = 4, TP_INT16 = 5, TP_INT32 = 6, TP_INT64 = 7,
    TP_STRING = 8, TP_BOOL = 9, TP_FLOAT16 = 10, TP_DOUBLE = 11, TP_UINT32 = 12, TP_UINT64 = 13,
    TP_COMPLEX64 = 14, TP_COMPLEX128 = 15, TP_BFLOAT16 = 16, TP_FLOAT8E4M3FN = 17,
    TP_FLOAT8E4M3FNUZ = 18, TP_FLOAT8E5M2 = 19, TP_FLOAT8E5M2FNUZ = 20, TP_UINT4 = 21, TP_INT4 = 22,
    TP_FLOAT4E2M1 = 23, TP_FLOAT8E8M0 = 24, TP_UINT2 = 25, TP_INT2 = 26
};

#define TP_MAX_DIMS 32

typedef struct {
    char *name;                /* NUL-terminated, never NULL */
    int32_t data_type;
    size_t ndim;
    int64_t dims[TP_MAX_DIMS];
    size_t count;              /* elements: the product of dims (1 for a 0-d tensor) */
    unsigned char *data;       /* count elements in raw layout (not strings) */
    size_t nbytes;
    char **strings;            /* TP_STRING: count buffers */
    size_t *string_lengths;
} tp_tensor;

/* Bits per element of data_type (1 per bool is 8), 0 for strings and unknown types. */
int tp_bits(int32_t data_type);
/* Bytes that count elements of data_type take in raw layout. */
size_t tp_raw_size(int32_t data_type, size_t count);

/* Decode: 0 on success; else -1 and a one-line reason in err. */
int tp_decode(const unsigned char *buf, size_t len, tp_tensor *out, char *err, size_t errlen);
/* Encode into a malloc'd buffer: 0 on success, -1 when out of memory. */
int tp_encode(const tp_tensor *t, unsigned char **buf, size_t *len);

int tp_load(const char *path, tp_tensor *out, char *err, size_t errlen);
int tp_save(const char *path, const tp_tensor *t, char *err, size_t errlen);

void tp_free(tp_tensor *t);

#endif
