/* The observer's JSON writer and reader: see json.h. */
#define _POSIX_C_SOURCE 200809L
#include "json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

static void out_of_memory(void) {
    fputs("observe: out of memory\n", stderr);
    exit(2);
}

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) out_of_memory();
    return p;
}

void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1); /* calloc refuses a product that overflows */
    if (!p) out_of_memory();
    return p;
}

char *xstrdup(const char *s) {
    size_t n = strlen(s);
    char *p = xmalloc(n + 1);
    memcpy(p, s, n + 1);
    return p;
}

char *format(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    char *p = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

/* ---------------------------------------------------------------- a growing string, and JSON out */

void sb_put(sb *b, const char *p, size_t n) {
    if (n > (size_t)-1 / 2 - b->len) out_of_memory();
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *grown = realloc(b->s, cap);
        if (!grown) out_of_memory();
        b->s = grown;
        b->cap = cap;
    }
    if (n) memcpy(b->s + b->len, p, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void sb_printf(sb *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    char *tmp = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(tmp, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb_put(b, tmp, (size_t)n);
    free(tmp);
}

void sb_json_str(sb *b, const char *s) {
    sb_put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            char esc[2] = {'\\', (char)*p};
            sb_put(b, esc, 2);
        } else if (*p < 0x20 || *p == 0x7F) {
            sb_printf(b, "\\u%04x", *p);
        } else {
            sb_put(b, (const char *)p, 1);
        }
    }
    sb_put(b, "\"", 1);
}

void sb_entry(sb *b, const char *key) {
    if (b->len) sb_put(b, ", ", 2);
    if (key) {
        sb_json_str(b, key);
        sb_put(b, ": ", 2);
    }
}

void sb_kv_str(sb *b, const char *key, const char *value) {
    sb_entry(b, key);
    sb_json_str(b, value);
}

char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    sb b = {0};
    char chunk[65536];
    size_t n;
    sb_put(&b, "", 0);
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) sb_put(&b, chunk, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(b.s);
        return NULL;
    }
    *len = b.len;
    return b.s;
}

/* ---------------------------------------------------------------- JSON in */

typedef struct {
    const char *p, *end;
    const char *err;
} jparser;

void j_free(jval *v) {
    free(v->str);
    for (size_t i = 0; i < v->n; i++) {
        j_free(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

static void j_ws(jparser *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t')) j->p++;
}

static void utf8_put(sb *b, unsigned cp) {
    char u[4];
    if (cp < 0x80) {
        u[0] = (char)cp;
        sb_put(b, u, 1);
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        sb_put(b, u, 2);
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        sb_put(b, u, 3);
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        sb_put(b, u, 4);
    }
}

static int j_hex4(jparser *j, unsigned *out) {
    if (j->end - j->p < 4) return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = *j->p++;
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

/* A string; a lone surrogate (which no UTF-8 text can hold) is a bad string, as Python's reader of
 * the same manifest refuses it. */
static char *j_string(jparser *j) {
    sb b = {0};
    sb_put(&b, "", 0);
    j->p++; /* the opening quote */
    while (j->p < j->end && *j->p != '"') {
        char c = *j->p++;
        if (c != '\\') {
            sb_put(&b, &c, 1);
            continue;
        }
        if (j->p >= j->end) break;
        char e = *j->p++;
        const char *simple = e ? strchr("\"\\/bfnrt", e) : NULL;
        if (simple) {
            static const char map[] = "\"\\/\b\f\n\r\t";
            sb_put(&b, &map[simple - "\"\\/bfnrt"], 1);
        } else if (e == 'u') {
            unsigned cp;
            if (j_hex4(j, &cp)) goto bad;
            if (cp >= 0xDC00 && cp <= 0xDFFF) goto bad;
            if (cp >= 0xD800 && cp < 0xDC00) {
                unsigned lo;
                if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u') goto bad;
                j->p += 2;
                if (j_hex4(j, &lo) || lo < 0xDC00 || lo > 0xDFFF) goto bad;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            utf8_put(&b, cp);
        } else {
            goto bad;
        }
    }
    if (j->p >= j->end) goto bad;
    j->p++;
    return b.s;
bad:
    free(b.s);
    j->err = "a bad string";
    return NULL;
}

static int j_literal(jparser *j, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(j->end - j->p) < n || strncmp(j->p, word, n)) return 0;
    j->p += n;
    return 1;
}

static int j_value(jparser *j, jval *v, int depth) {
    memset(v, 0, sizeof *v);
    j_ws(j);
    if (depth > MAX_DEPTH) return j->err = "nested too deep", -1;
    if (j->p >= j->end) return j->err = "unexpected end", -1;
    char c = *j->p;
    if (c == '{' || c == '[') {
        int obj = c == '{';
        v->t = obj ? J_OBJ : J_ARR;
        j->p++;
        size_t cap = 0;
        j_ws(j);
        if (j->p < j->end && *j->p == (obj ? '}' : ']')) {
            j->p++;
            return 0;
        }
        for (;;) {
            if (v->n == cap) {
                cap = cap ? cap * 2 : 8;
                jval *items = realloc(v->items, cap * sizeof *items);
                if (!items) out_of_memory();
                v->items = items;
                if (obj) {
                    char **keys = realloc(v->keys, cap * sizeof *keys);
                    if (!keys) out_of_memory();
                    v->keys = keys;
                }
            }
            if (obj) {
                j_ws(j);
                if (j->p >= j->end || *j->p != '"') return j->err = "expected a key", -1;
                char *key = j_string(j);
                if (!key) return -1;
                j_ws(j);
                if (j->p >= j->end || *j->p != ':') {
                    free(key);
                    return j->err = "expected ':'", -1;
                }
                j->p++;
                v->keys[v->n] = key;
            }
            int bad = j_value(j, &v->items[v->n], depth + 1);
            v->n++;
            if (bad) return -1;
            j_ws(j);
            if (j->p < j->end && *j->p == ',') {
                j->p++;
                continue;
            }
            if (j->p < j->end && *j->p == (obj ? '}' : ']')) {
                j->p++;
                return 0;
            }
            return j->err = "expected ',' or a closing bracket", -1;
        }
    }
    if (c == '"') {
        v->t = J_STR;
        v->str = j_string(j);
        return v->str ? 0 : -1;
    }
    if (j_literal(j, "null")) return v->t = J_NULL, 0;
    if (j_literal(j, "true")) return v->t = J_BOOL, v->num = 1, 0;
    if (j_literal(j, "false")) return v->t = J_BOOL, 0;
    if (c != '-' && (c < '0' || c > '9')) return j->err = "unexpected character", -1;
    char *stop;
    v->num = strtod(j->p, &stop); /* text[len] is NUL: strtod stops there at the latest */
    if (stop == j->p || stop > j->end) return j->err = "a bad number", -1;
    v->t = J_NUM;
    j->p = stop;
    return 0;
}

int j_parse(const char *text, size_t len, jval *root, const char **err) {
    jparser j = {text, text + len, NULL};
    if (j_value(&j, root, 0)) {
        *err = j.err ? j.err : "not JSON";
        return -1;
    }
    j_ws(&j);
    if (j.p != j.end) {
        *err = "text after the JSON value";
        return -1;
    }
    return 0;
}

const jval *j_get(const jval *obj, const char *key) {
    if (!obj || obj->t != J_OBJ) return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (obj->keys[i] && !strcmp(obj->keys[i], key)) return &obj->items[i];
    return NULL;
}

int j_int(const jval *v, long long lo, long long hi, long long *out) {
    if (!v || v->t != J_NUM) return 0;
    if (!(v->num >= (double)lo && v->num <= (double)hi)) return 0; /* NaN fails both */
    long long i = (long long)v->num;
    if ((double)i != v->num) return 0;
    *out = i;
    return 1;
}
