/* The observer's JSON: a growing string that JSON is written into, and a small reader of JSON text
 * (the bundle's manifest). Kept apart from observe.c so it builds and is fuzzed without ONNX Runtime
 * (tests/robustness/native_fuzz.c). Out of memory is fatal: one line on stderr, exit 2, as every
 * allocation of the observer.
 */
#ifndef ONNX_GATE_JSON_H
#define ONNX_GATE_JSON_H

#include <stddef.h>

#if defined(__GNUC__) || defined(__clang__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
char *xstrdup(const char *s);
PRINTF_LIKE(1, 2) char *format(const char *fmt, ...);

/* ---------------------------------------------------------------- a growing string, and JSON out */

typedef struct {
    char *s;
    size_t len, cap;
} sb;

void sb_put(sb *b, const char *p, size_t n);
PRINTF_LIKE(2, 3) void sb_printf(sb *b, const char *fmt, ...);
/* A JSON string: quotes, backslashes and control bytes escaped. */
void sb_json_str(sb *b, const char *s);
/* The separator and, in an object, the key of the next entry of an object or array. */
void sb_entry(sb *b, const char *key);
void sb_kv_str(sb *b, const char *key, const char *value);

/* The whole file, NUL-terminated; NULL with errno set when it cannot be opened or read. */
char *read_file(const char *path, size_t *len);

/* ---------------------------------------------------------------- JSON in */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
    jtype t;
    double num;
    char *str;
    size_t n;
    struct jval *items;
    char **keys;
} jval;

/* Parse `text` (len bytes, with a NUL at text[len]) into *root: 0, or -1 with *err a static reason.
 * *root is always safe to j_free. */
int j_parse(const char *text, size_t len, jval *root, const char **err);
void j_free(jval *v);
/* The member `key` of an object; NULL when `obj` is not an object or has no such member. */
const jval *j_get(const jval *obj, const char *key);
/* Whether `v` is a number with an integral value in [lo, hi] (then *out holds it): a value a cast
 * to an integer type can hold without undefined behaviour. */
int j_int(const jval *v, long long lo, long long hi, long long *out);

#endif
