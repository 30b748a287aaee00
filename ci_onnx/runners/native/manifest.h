/* What the observer reads of a bundle's manifest.json: the input and output specs (name, dtype, rank,
 * axis 0 as written and whether it is declared dynamic) and the test data sets' directories, with
 * the batch-axis rules of ci_onnx/observer/feeds.py. A manifest that is not valid JSON or not a
 * manifest of onnx-gate is refused with the reason; nothing in it is trusted further than that.
 */
#ifndef ONNX_GATE_MANIFEST_H
#define ONNX_GATE_MANIFEST_H

#include <stddef.h>

typedef struct {
    char *name;
    char *dtype;
    int tensor;          /* values.kind(dtype) == "tensor" */
    size_t ndim;
    char *dim0;          /* str(shape[0]), NULL for a 0-d spec */
    int dim0_symbolic;
    int dim0_declared;   /* "0" in dynamic_axes[name] */
} spec;

typedef struct {
    spec *inputs, *outputs;
    size_t n_inputs, n_outputs;
    char **sets;
    size_t n_sets;
} manifest;

/* Parse manifest text (len bytes, NUL at text[len]): 0, or -1 with a malloc'd one-line reason in *why.
 * *m is always safe to free_manifest. */
int parse_manifest(const char *text, size_t len, manifest *m, char **why);
void free_manifest(manifest *m);
/* Whether the inputs have no batch axis to serve other batch sizes on (feeds.py batch_axis_problem). */
int batch_axis_problem(const manifest *m);
/* Whether output `s`'s axis 0 is the inputs' batch axis (feeds.py batched_outputs). */
int batched_output(const manifest *m, const spec *s);

#endif
