/* The fuzz driver of the native observer's parsers of untrusted bytes, built with the observer's own
 * tensorproto.c, json.c and manifest.c under -fsanitize=address,undefined (test_native_sanitized.py).
 *
 *   native_fuzz CORPUS
 *
 * CORPUS is a sequence of records: a 4-byte little-endian length, one byte of kind ('T' a TensorProto
 * file, 'M' a manifest.json), then that many bytes. For each record one line on stdout: `1 HEX`
 * (accepted; HEX is what the codec writes back: the file the observer would write) or `0 REASON`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "manifest.h"
#include "tensorproto.h"

static void tensor(const unsigned char *p, size_t n) {
    tp_tensor t;
    char err[512];
    if (tp_decode(p, n, &t, err, sizeof err)) {
        for (char *c = err; *c; c++)
            if (*c == '\n' || *c == '\r') *c = ' ';
        printf("0 %s\n", err);
        return;
    }
    unsigned char *buf;
    size_t len;
    if (tp_encode(&t, &buf, &len)) {
        printf("0 out of memory\n");
        tp_free(&t);
        return;
    }
    printf("1 ");
    for (size_t i = 0; i < len; i++) printf("%02x", buf[i]);
    printf("\n");
    free(buf);
    tp_free(&t);
}

static void manifest_text(const unsigned char *p, size_t n) {
    char *text = xmalloc(n + 1);
    if (n) memcpy(text, p, n);
    text[n] = '\0';
    manifest m;
    char *why = NULL;
    if (parse_manifest(text, n, &m, &why)) {
        for (char *c = why; *c; c++)
            if (*c == '\n') *c = ' ';
        printf("0 %s\n", why);
        free(why);
    } else {
        printf("1 %d", batch_axis_problem(&m));
        for (size_t i = 0; i < m.n_outputs; i++) printf(" %d", batched_output(&m, &m.outputs[i]));
        printf("\n");
    }
    free_manifest(&m);
    free(text);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: native_fuzz CORPUS\n");
        return 2;
    }
    size_t len;
    char *all = read_file(argv[1], &len);
    if (!all) {
        perror(argv[1]);
        return 2;
    }
    const unsigned char *p = (const unsigned char *)all, *end = p + len;
    while (end - p >= 5) {
        size_t n = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
        char kind = (char)p[4];
        p += 5;
        if (n > (size_t)(end - p)) {
            fprintf(stderr, "native_fuzz: a record runs past the end of %s\n", argv[1]);
            free(all);
            return 2;
        }
        /* Each record in a buffer of its own size, so a read past its end is a heap overflow. */
        unsigned char *own = xmalloc(n);
        if (n) memcpy(own, p, n);
        if (kind == 'T') tensor(own, n);
        else manifest_text(own, n);
        free(own);
        p += n;
    }
    fflush(stdout);
    free(all);
    return 0;
}
