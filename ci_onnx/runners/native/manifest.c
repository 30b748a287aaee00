/* The manifest as the observer reads it: see manifest.h. */
#define _POSIX_C_SOURCE 200809L
#include "manifest.h"

#include <stdlib.h>
#include <string.h>

#include "json.h"

#define DIM_LIMIT (1LL << 53) /* a JSON number past this is no exact integer, let alone a dimension */

static int read_specs(const jval *list, const jval *dynamic, const char *what, spec **out, size_t *n,
                      char **why) {
    if (!list || list->t != J_ARR) return *why = format("%s is not a list", what), -1;
    *out = xcalloc(list->n, sizeof(spec));
    *n = list->n;
    for (size_t i = 0; i < list->n; i++) {
        spec *s = &(*out)[i];
        const jval *name = j_get(&list->items[i], "name"), *shape = j_get(&list->items[i], "shape");
        const jval *dtype = j_get(&list->items[i], "dtype");
        if (!name || name->t != J_STR || !shape || shape->t != J_ARR)
            return *why = format("%s[%zu] has no name or no shape", what, i), -1;
        s->name = xstrdup(name->str);
        s->dtype = xstrdup(dtype && dtype->t == J_STR ? dtype->str : "");
        const char *paren = strchr(s->dtype, '(');
        s->tensor = !paren || !strncmp(s->dtype, "tensor(", 7);
        s->ndim = shape->n;
        if (shape->n) {
            const jval *d0 = &shape->items[0];
            long long fixed;
            if (d0->t == J_STR) {
                s->dim0_symbolic = 1;
                s->dim0 = xstrdup(d0->str);
            } else if (j_int(d0, -DIM_LIMIT, DIM_LIMIT, &fixed)) {
                s->dim0 = format("%lld", fixed);
            } else {
                return *why = format("%s[%zu].shape[0] is neither a name nor an integer dimension", what, i), -1;
            }
        }
        const jval *axes = j_get(dynamic, s->name);
        s->dim0_declared = j_get(axes, "0") != NULL;
    }
    return 0;
}

static int is_bundle_dir(const jval *dir) {
    return dir && dir->t == J_STR && !strstr(dir->str, "..") && dir->str[0] != '/';
}

static int read_sweeps(const jval *list, manifest *m, char **why) {
    if (!list) return 0; /* schema 1: no sweep points */
    if (list->t != J_ARR) return *why = format("sweep_sets is not a list"), -1;
    m->sweeps = xcalloc(list->n, sizeof(sweep_point));
    for (size_t i = 0; i < list->n; i++) {
        const jval *sw = &list->items[i], *dir = j_get(sw, "directory"), *symbol = j_get(sw, "symbol");
        long long size, count;
        if (!is_bundle_dir(dir) || !symbol || symbol->t != J_STR || !j_int(j_get(sw, "size"), 1, DIM_LIMIT, &size) ||
            !j_int(j_get(sw, "count"), 1, DIM_LIMIT, &count))
            return *why = format("sweep_sets[%zu] is not a sweep point of the bundle (directory, symbol, size, count)", i), -1;
        sweep_point *p = &m->sweeps[m->n_sweeps++];
        p->directory = xstrdup(dir->str);
        p->label = format("%s=%lld", symbol->str, size);
        p->count = count;
    }
    return 0;
}

void free_manifest(manifest *m) {
    for (size_t i = 0; i < m->n_inputs + m->n_outputs; i++) {
        spec *s = i < m->n_inputs ? &m->inputs[i] : &m->outputs[i - m->n_inputs];
        free(s->name);
        free(s->dtype);
        free(s->dim0);
    }
    free(m->inputs);
    free(m->outputs);
    for (size_t i = 0; i < m->n_sets; i++) free(m->sets[i]);
    free(m->sets);
    for (size_t i = 0; i < m->n_sweeps; i++) free(m->sweeps[i].directory), free(m->sweeps[i].label);
    free(m->sweeps);
    memset(m, 0, sizeof *m);
}

int parse_manifest(const char *text, size_t len, manifest *m, char **why) {
    memset(m, 0, sizeof *m);
    jval root;
    const char *err = NULL;
    int rc = -1;
    if (j_parse(text, len, &root, &err)) {
        *why = format("not valid JSON (%s)", err);
        goto done;
    }
    const jval *dynamic = j_get(&root, "dynamic_axes"), *sets = j_get(&root, "test_data_sets");
    if (read_specs(j_get(&root, "inputs"), dynamic, "inputs", &m->inputs, &m->n_inputs, why)) goto done;
    if (read_specs(j_get(&root, "outputs"), dynamic, "outputs", &m->outputs, &m->n_outputs, why)) goto done;
    if (!sets || sets->t != J_ARR) {
        *why = format("test_data_sets is not a list");
        goto done;
    }
    m->sets = xcalloc(sets->n, sizeof(char *));
    for (size_t i = 0; i < sets->n; i++) {
        const jval *dir = j_get(&sets->items[i], "directory");
        if (!is_bundle_dir(dir) || !dir->str[0]) {
            *why = format("test_data_sets[%zu].directory is not a directory of the bundle", i);
            goto done;
        }
        m->sets[m->n_sets++] = xstrdup(dir->str);
    }
    if (read_sweeps(j_get(&root, "sweep_sets"), m, why)) goto done;
    rc = 0;
done:
    j_free(&root);
    return rc;
}

int batch_axis_problem(const manifest *m) {
    if (!m->n_inputs) return 1;
    for (size_t i = 0; i < m->n_inputs; i++) {
        const spec *s = &m->inputs[i];
        if (!s->tensor || !s->ndim) return 1;
        if (!s->dim0_symbolic && !s->dim0_declared) return 1;
        if (strcmp(s->dim0, m->inputs[0].dim0)) return 1;
    }
    return 0;
}

int batched_output(const manifest *m, const spec *s) {
    if (!s->tensor || !s->ndim) return 0;
    if (s->dim0_declared) return 1;
    if (!s->dim0_symbolic) return 0;
    for (size_t i = 0; i < m->n_inputs; i++)
        if (m->inputs[i].ndim && m->inputs[i].dim0_symbolic && !strcmp(m->inputs[i].dim0, s->dim0)) return 1;
    return 0;
}
