/* The native runner: observe one bundle on one libonnxruntime through ONNX Runtime's C API, draw no
 * verdict. The view of a C or C++ serving application.
 *
 *   observe --lib PATH/libonnxruntime.so --bundle DIR --target-id ID --ep KEY --ep-name NAME
 *           [--ep-append NAME] --out DIR --latency-runs N --batch-sizes 1,8 [--strict-fallback]
 *           [--memory-threads N]
 *
 * The provider comes by its providers.toml key (--ep), the name onnxruntime registers (--ep-name) and
 * the name the C API appends it by (--ep-append; NNAPI: its own function), all three from
 * providers.toml through the host: no table of providers lives here.
 *
 * writes OUT/observation.json (the Observation of ci_onnx/contracts/results.py), every observed output as a
 * TensorProto file, the profile trace of the parity runs (native_profile.json) and the verbose log
 * of a session created at verbose level (verbose.log, from a logging callback); the Python side turns
 * them into a Placement with the code every runner shares. Exit 0 when it observed (a model that
 * fails to load is `load_error` in the JSON); 2 with one line on stderr for a usage error (an
 * unknown argument, an EP other than the CPU's with no name to append it by, a library that cannot be loaded, a bundle without a readable manifest).
 *
 * The library is dlopen'd, never linked, and asked for the lowest API version that has every
 * function called here (OBSERVE_API_VERSION), so one build runs against any release from 1.12 on:
 * a binary linked against one release fails on another with "version 'VERS_1.30.0' not found".
 *
 * C11 plus POSIX (dlopen, pthreads, clock_gettime). Linux and Android read memory from
 * /proc/self/status; macOS would read getrusage's lifetime peak (noted in the observation). Windows
 * would take LoadLibrary/GetProcAddress for dlopen/dlsym and GetProcessMemoryInfo for VmHWM.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "manifest.h"
#include "onnxruntime_c_api.h"
#include "tensorproto.h"

#define OBSERVE_API_VERSION 12 /* SessionOptionsAppendExecutionProvider is the newest function used */
#define WARMUP_RUNS 3
/* ci_onnx/observer/measure.py's SWEEP_BUDGET_MS and sweep_runs: the same rule in every observer. */
#define SWEEP_BUDGET_MS 2000.0
#define MESSAGE_MAX 2000
#define CPU_EP "CPUExecutionProvider"

static const OrtApi *ort;
static OrtEnv *env;
static OrtAllocator *allocator;
static OrtMemoryInfo *cpu_memory;

/* ---------------------------------------------------------------- small helpers */

PRINTF_LIKE(1, 2) static void usage(const char *fmt, ...) {
    va_list ap;
    fputs("observe: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

static char *join_path(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = xmalloc(n);
    snprintf(p, n, "%s/%s", a, b);
    return p;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static double round_to(double x, int digits) {
    double scale = 1.0;
    for (int i = 0; i < digits; i++) scale *= 10.0;
    double y = x * scale;
    long long r = (long long)(y < 0 ? y - 0.5 : y + 0.5);
    return (double)r / scale;
}

/* A message on one line: whitespace runs collapsed to one space, at most MESSAGE_MAX bytes (cut on a
 * UTF-8 boundary), as the Python runner's _message writes it. */
static char *one_line(const char *text) {
    size_t n = strlen(text);
    char *out = xmalloc(n + 1);
    size_t o = 0;
    int space = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
            space = o > 0;
            continue;
        }
        if (space) out[o++] = ' ';
        space = 0;
        out[o++] = (char)c;
    }
    if (o > MESSAGE_MAX) {
        o = MESSAGE_MAX;
        while (o > 0 && ((unsigned char)out[o] & 0xC0) == 0x80) o--;
    }
    out[o] = '\0';
    if (!o) {
        free(out);
        return xstrdup("error");
    }
    return out;
}

/* A status nothing can be done about (freeing memory failed). */
static void ignore(OrtStatus *status) {
    if (status) ort->ReleaseStatus(status);
}

/* The status's message (one line), releasing the status. */
static char *status_message(OrtStatus *status) {
    char *m = one_line(ort->GetErrorMessage(status));
    ort->ReleaseStatus(status);
    return m;
}


/* ---------------------------------------------------------------- the manifest */

static void read_manifest(const char *bundle, manifest *m) {
    char *path = join_path(bundle, "manifest.json");
    size_t len;
    char *text = read_file(path, &len);
    if (!text) usage("%s: %s; is this a bundle written by `onnx-gate export`?", path, strerror(errno));
    char *why = NULL;
    if (parse_manifest(text, len, m, &why))
        usage("%s: not a manifest of onnx-gate: %s; re-run `onnx-gate export`", path, why);
    free(text);
    free(path);
}

/* ---------------------------------------------------------------- values: a set of named tensors */

typedef struct {
    size_t n;
    char **names;
    tp_tensor *t;
} values;

static void free_values(values *v) {
    for (size_t i = 0; i < v->n; i++) {
        free(v->names[i]);
        tp_free(&v->t[i]);
    }
    free(v->names);
    free(v->t);
    memset(v, 0, sizeof *v);
}

static const tp_tensor *value_of(const values *v, const char *name) {
    for (size_t i = 0; i < v->n; i++)
        if (!strcmp(v->names[i], name)) return &v->t[i];
    return NULL;
}

/* The inputs of one test data set, by the manifest's order; NULL and *err on failure. */
static int read_inputs(const manifest *m, const char *bundle, const char *dir, values *out, char **err) {
    memset(out, 0, sizeof *out);
    out->names = xcalloc(m->n_inputs, sizeof(char *));
    out->t = xcalloc(m->n_inputs, sizeof(tp_tensor));
    for (size_t i = 0; i < m->n_inputs; i++) {
        if (!m->inputs[i].tensor) {
            *err = format("input %s is a %s; the native runner feeds tensors only", m->inputs[i].name,
                          m->inputs[i].dtype);
            free_values(out);
            return -1;
        }
        char rel[64];
        snprintf(rel, sizeof rel, "input_%zu.pb", i);
        char *sub = join_path(bundle, dir), *path = join_path(sub, rel);
        char why[1024];
        int rc = tp_load(path, &out->t[i], why, sizeof why);
        free(sub);
        free(path);
        if (rc) {
            *err = format("%s; re-run `onnx-gate export`", why);
            free_values(out);
            return -1;
        }
        out->names[i] = xstrdup(m->inputs[i].name);
        out->n = i + 1;
    }
    return 0;
}

static size_t row_bytes(const tp_tensor *t) {
    size_t per = 1;
    for (size_t d = 1; d < t->ndim; d++) per *= (size_t)t->dims[d];
    return t->data_type == TP_STRING ? per : tp_raw_size(t->data_type, per);
}

/* Rows `idx[0..n)` of `t` along axis 0, cycling (feeds.first: np.take with arange(n) % dim0). */
static int take_rows(const tp_tensor *t, const size_t *idx, size_t n, tp_tensor *out, char **err) {
    memset(out, 0, sizeof *out);
    if (!t->ndim) return *err = format("tensor %s is 0-d, so it has no batch axis", t->name), -1;
    if (tp_bits(t->data_type) && tp_bits(t->data_type) < 8)
        return *err = format("the native runner cannot take rows of %d-bit elements", tp_bits(t->data_type)), -1;
    size_t dim0 = (size_t)t->dims[0];
    if (!dim0) n = 0; /* an empty axis stays empty */
    /* A decoded tensor holds dim0 * elems elements and dim0 * per bytes (tp_decode checked both
     * against the file), so only the n rows asked for can overflow. */
    size_t per = dim0 ? row_bytes(t) : 0, elems = 1;
    for (size_t d = 1; dim0 && d < t->ndim; d++) elems *= (size_t)t->dims[d];
    size_t widest = per > elems ? per : elems;
    if (widest && n > (size_t)-1 / widest)
        return *err = format("%zu rows of tensor %s are more than this machine can address", n, t->name), -1;
    *out = *t;
    out->name = xstrdup(t->name);
    out->dims[0] = (int64_t)n;
    out->count = n * elems;
    out->data = NULL;
    out->strings = NULL;
    out->string_lengths = NULL;
    if (t->data_type == TP_STRING) {
        out->strings = xcalloc(out->count, sizeof(char *));
        out->string_lengths = xcalloc(out->count, sizeof(size_t));
        for (size_t r = 0; r < n; r++)
            for (size_t k = 0; k < elems; k++) {
                size_t src = (idx[r] % dim0) * elems + k, dst = r * elems + k;
                out->strings[dst] = xmalloc(t->string_lengths[src] + 1);
                memcpy(out->strings[dst], t->strings[src], t->string_lengths[src] + 1);
                out->string_lengths[dst] = t->string_lengths[src];
            }
        return 0;
    }
    out->nbytes = n * per;
    out->data = xmalloc(out->nbytes);
    for (size_t r = 0; r < n; r++) memcpy(out->data + r * per, t->data + (idx[r] % dim0) * per, per);
    return 0;
}

static int take_values(const values *v, size_t start, size_t n, values *out, char **err) {
    memset(out, 0, sizeof *out);
    size_t *idx = xmalloc(n * sizeof(size_t));
    for (size_t i = 0; i < n; i++) idx[i] = start + i;
    out->names = xcalloc(v->n, sizeof(char *));
    out->t = xcalloc(v->n, sizeof(tp_tensor));
    for (size_t i = 0; i < v->n; i++) {
        if (take_rows(&v->t[i], idx, n, &out->t[i], err)) {
            free(idx);
            free_values(out);
            return -1;
        }
        out->names[i] = xstrdup(v->names[i]);
        out->n = i + 1;
    }
    free(idx);
    return 0;
}

/* Parts stacked on axis 0 (np.concatenate); -1 and *err when they do not stack. */
static int stack(tp_tensor *const *parts, size_t n, tp_tensor *out, char **err) {
    memset(out, 0, sizeof *out);
    const tp_tensor *first = parts[0];
    for (size_t i = 0; i < n; i++) {
        const tp_tensor *p = parts[i];
        if (!p->ndim) return *err = xstrdup("an output is not a tensor with a batch axis"), -1;
        int same = p->data_type == first->data_type && p->ndim == first->ndim;
        for (size_t d = 1; same && d < p->ndim; d++) same = p->dims[d] == first->dims[d];
        if (!same) return *err = xstrdup("the parts differ in element type or in the shape after axis 0"), -1;
    }
    if (first->data_type == TP_STRING || tp_bits(first->data_type) < 8)
        return *err = xstrdup("the native runner stacks tensors of whole-byte elements only"), -1;
    *out = *first;
    out->name = xstrdup(first->name);
    out->dims[0] = 0;
    out->nbytes = 0;
    for (size_t i = 0; i < n; i++) out->dims[0] += parts[i]->dims[0], out->nbytes += parts[i]->nbytes;
    out->count = out->nbytes / (tp_raw_size(first->data_type, 1) ? tp_raw_size(first->data_type, 1) : 1);
    out->data = xmalloc(out->nbytes);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (parts[i]->nbytes) memcpy(out->data + at, parts[i]->data, parts[i]->nbytes);
        at += parts[i]->nbytes;
    }
    return 0;
}

/* ---------------------------------------------------------------- a session and its runs */

typedef struct {
    OrtSession *sess;
    size_t n_in, n_out;
    char **in_names, **out_names;
    int64_t *in_dim0; /* axis 0 of each input as the model declares it; -1 when not fixed */
} session;

static void free_session(session *s) {
    for (size_t i = 0; i < s->n_in; i++) free(s->in_names[i]);
    for (size_t i = 0; i < s->n_out; i++) free(s->out_names[i]);
    free(s->in_names);
    free(s->out_names);
    free(s->in_dim0);
    if (s->sess) ort->ReleaseSession(s->sess);
    memset(s, 0, sizeof *s);
}

static char *take_name(char *name) {
    char *copy = xstrdup(name);
    ignore(ort->AllocatorFree(allocator, name));
    return copy;
}

static OrtStatus *describe_session(session *s) {
    OrtStatus *st;
    if ((st = ort->SessionGetInputCount(s->sess, &s->n_in)) || (st = ort->SessionGetOutputCount(s->sess, &s->n_out)))
        return st;
    s->in_names = xcalloc(s->n_in, sizeof(char *));
    s->out_names = xcalloc(s->n_out, sizeof(char *));
    s->in_dim0 = xcalloc(s->n_in, sizeof(int64_t));
    for (size_t i = 0; i < s->n_in; i++) {
        char *name;
        if ((st = ort->SessionGetInputName(s->sess, i, allocator, &name))) return st;
        s->in_names[i] = take_name(name);
        s->in_dim0[i] = -1;
        OrtTypeInfo *info;
        if ((st = ort->SessionGetInputTypeInfo(s->sess, i, &info))) return st;
        const OrtTensorTypeAndShapeInfo *tinfo = NULL;
        enum ONNXType type = ONNX_TYPE_UNKNOWN;
        if (!(st = ort->GetOnnxTypeFromTypeInfo(info, &type)) && type == ONNX_TYPE_TENSOR &&
            !(st = ort->CastTypeInfoToTensorInfo(info, &tinfo)) && tinfo) {
            size_t nd = 0;
            if (!(st = ort->GetDimensionsCount(tinfo, &nd)) && nd) {
                int64_t *dims = xcalloc(nd, sizeof(int64_t));
                if (!(st = ort->GetDimensions(tinfo, dims, nd))) s->in_dim0[i] = dims[0];
                free(dims);
            }
        }
        ort->ReleaseTypeInfo(info);
        if (st) return st;
    }
    for (size_t i = 0; i < s->n_out; i++) {
        char *name;
        if ((st = ort->SessionGetOutputName(s->sess, i, allocator, &name))) return st;
        s->out_names[i] = take_name(name);
    }
    return NULL;
}

static OrtStatus *to_ortvalue(const tp_tensor *t, OrtValue **out) {
    if (t->data_type == TP_STRING) {
        OrtStatus *st = ort->CreateTensorAsOrtValue(allocator, t->dims, t->ndim, ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING, out);
        if (st) return st;
        return ort->FillStringTensor(*out, (const char *const *)t->strings, t->count);
    }
    return ort->CreateTensorWithDataAsOrtValue(cpu_memory, t->data ? (void *)t->data : (void *)"", t->nbytes,
                                               t->dims, t->ndim, (ONNXTensorElementDataType)t->data_type, out);
}

static char *from_ortvalue(const OrtValue *v, const char *name, tp_tensor *out) {
    memset(out, 0, sizeof *out);
    int is_tensor = 0;
    OrtStatus *st = ort->IsTensor(v, &is_tensor);
    if (st) return status_message(st);
    if (!is_tensor) return format("output %s is not a tensor; the native runner reads tensors only", name);
    OrtTensorTypeAndShapeInfo *info;
    if ((st = ort->GetTensorTypeAndShape(v, &info))) return status_message(st);
    ONNXTensorElementDataType type;
    size_t nd = 0, count = 0;
    if (!(st = ort->GetTensorElementType(info, &type)) && !(st = ort->GetDimensionsCount(info, &nd)) &&
        nd <= TP_MAX_DIMS && !(st = ort->GetDimensions(info, out->dims, nd)))
        st = ort->GetTensorShapeElementCount(info, &count);
    ort->ReleaseTensorTypeAndShapeInfo(info);
    if (st) return status_message(st);
    if (nd > TP_MAX_DIMS) return format("output %s has %zu dimensions", name, nd);
    out->name = xstrdup(name);
    out->data_type = (int32_t)type;
    out->ndim = nd;
    out->count = count;
    if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING) {
        size_t total = 0;
        if ((st = ort->GetStringTensorDataLength(v, &total))) return tp_free(out), status_message(st);
        char *buf = xmalloc(total + 1);
        size_t *offsets = xcalloc(count, sizeof(size_t));
        if ((st = ort->GetStringTensorContent(v, buf, total, offsets, count))) {
            free(buf);
            free(offsets);
            tp_free(out);
            return status_message(st);
        }
        out->strings = xcalloc(count, sizeof(char *));
        out->string_lengths = xcalloc(count, sizeof(size_t));
        for (size_t i = 0; i < count; i++) {
            size_t end = i + 1 < count ? offsets[i + 1] : total, n = end - offsets[i];
            out->strings[i] = xmalloc(n + 1);
            memcpy(out->strings[i], buf + offsets[i], n);
            out->strings[i][n] = '\0';
            out->string_lengths[i] = n;
        }
        free(buf);
        free(offsets);
        return NULL;
    }
    if (!tp_bits(out->data_type)) {
        tp_free(out);
        return format("output %s has element type %d, which the native runner cannot write", name, (int)type);
    }
    out->nbytes = tp_raw_size(out->data_type, count);
    out->data = xmalloc(out->nbytes);
    void *data = NULL;
    if (count && (st = ort->GetTensorMutableData((OrtValue *)v, &data))) return tp_free(out), status_message(st);
    if (count) memcpy(out->data, data, out->nbytes);
    return NULL;
}

/* One run: every output of the session, by name. NULL, or the runtime's message. */
static char *run(const session *s, const values *feeds, values *got) {
    memset(got, 0, sizeof *got);
    OrtValue **ins = xcalloc(feeds->n, sizeof(OrtValue *)), **outs = xcalloc(s->n_out, sizeof(OrtValue *));
    const char **names = xcalloc(feeds->n, sizeof(char *));
    char *err = NULL;
    for (size_t i = 0; i < feeds->n && !err; i++) {
        names[i] = feeds->names[i];
        OrtStatus *st = to_ortvalue(&feeds->t[i], &ins[i]);
        if (st) err = status_message(st);
    }
    if (!err) {
        OrtStatus *st = ort->Run(s->sess, NULL, names, (const OrtValue *const *)ins, feeds->n,
                                 (const char *const *)s->out_names, s->n_out, outs);
        if (st) err = status_message(st);
    }
    if (!err) {
        got->names = xcalloc(s->n_out, sizeof(char *));
        got->t = xcalloc(s->n_out, sizeof(tp_tensor));
        for (size_t i = 0; i < s->n_out && !err; i++) {
            err = from_ortvalue(outs[i], s->out_names[i], &got->t[i]);
            if (!err) got->names[got->n++] = xstrdup(s->out_names[i]);
        }
        if (err) free_values(got);
    }
    for (size_t i = 0; i < feeds->n; i++)
        if (ins[i]) ort->ReleaseValue(ins[i]);
    for (size_t i = 0; i < s->n_out; i++)
        if (outs[i]) ort->ReleaseValue(outs[i]);
    free(ins);
    free(outs);
    free(names);
    return err;
}

/* One run without keeping the outputs (latency and memory). */
static char *run_only(const session *s, OrtValue *const *ins, const char *const *names, size_t n) {
    OrtValue **outs = xcalloc(s->n_out, sizeof(OrtValue *));
    OrtStatus *st = ort->Run(s->sess, NULL, names, (const OrtValue *const *)ins, n,
                             (const char *const *)s->out_names, s->n_out, outs);
    for (size_t i = 0; i < s->n_out; i++)
        if (outs[i]) ort->ReleaseValue(outs[i]);
    free(outs);
    return st ? status_message(st) : NULL;
}

/* The inputs as OrtValues, once, for repeated runs. */
typedef struct {
    size_t n;
    OrtValue **ins;
    const char **names;
} prepared;

static char *prepare(const values *feeds, prepared *p) {
    p->n = feeds->n;
    p->ins = xcalloc(feeds->n, sizeof(OrtValue *));
    p->names = xcalloc(feeds->n, sizeof(char *));
    for (size_t i = 0; i < feeds->n; i++) {
        p->names[i] = feeds->names[i];
        OrtStatus *st = to_ortvalue(&feeds->t[i], &p->ins[i]);
        if (st) return status_message(st);
    }
    return NULL;
}

static void free_prepared(prepared *p) {
    for (size_t i = 0; i < p->n; i++)
        if (p->ins[i]) ort->ReleaseValue(p->ins[i]);
    free(p->ins);
    free(p->names);
}

/* feeds.run_set: one test data set in one run, or in chunks of a batch axis the model froze while the
 * manifest declares it. */
static char *run_set(const session *s, const manifest *m, const values *feeds, values *got) {
    int64_t chunk = -1;
    int several = 0;
    for (size_t i = 0; i < s->n_in; i++)
        if (s->in_dim0[i] >= 0) {
            if (chunk >= 0 && chunk != s->in_dim0[i]) several = 1;
            chunk = s->in_dim0[i];
        }
    int64_t count = -1;
    for (size_t i = 0; i < feeds->n; i++)
        if (feeds->t[i].ndim) {
            if (count >= 0 && count != feeds->t[i].dims[0]) several = 1;
            count = feeds->t[i].dims[0];
        }
    if (batch_axis_problem(m) || several || chunk <= 0 || count < 0 || chunk >= count || count % chunk)
        return run(s, feeds, got);
    size_t n_parts = (size_t)(count / chunk);
    values *parts = xcalloc(n_parts, sizeof(values));
    char *err = NULL;
    for (size_t p = 0; p < n_parts && !err; p++) {
        values part;
        if (take_values(feeds, (size_t)chunk * p, (size_t)chunk, &part, &err)) break;
        err = run(s, &part, &parts[p]);
        free_values(&part);
    }
    int fallback = 0;
    if (!err) {
        memset(got, 0, sizeof *got);
        got->names = xcalloc(parts[0].n, sizeof(char *));
        got->t = xcalloc(parts[0].n, sizeof(tp_tensor));
        tp_tensor **each = xcalloc(n_parts, sizeof(tp_tensor *));
        for (size_t o = 0; o < parts[0].n && !err && !fallback; o++) {
            for (size_t p = 0; p < n_parts; p++) each[p] = &parts[p].t[o];
            if (!each[0]->ndim) {
                fallback = 1; /* not a batched output: let the runtime say what is wrong */
                break;
            }
            if (stack(each, n_parts, &got->t[o], &err)) break;
            got->names[got->n++] = xstrdup(parts[0].names[o]);
        }
        free(each);
        if (err || fallback) free_values(got);
    }
    for (size_t p = 0; p < n_parts; p++) free_values(&parts[p]);
    free(parts);
    if (fallback) return run(s, feeds, got);
    return err;
}

/* ---------------------------------------------------------------- writing outputs */

static void make_dirs(const char *path) {
    char *p = xstrdup(path);
    for (char *c = p + 1; *c; c++)
        if (*c == '/') {
            *c = '\0';
            mkdir(p, 0755);
            *c = '/';
        }
    mkdir(p, 0755);
    free(p);
}

/* feeds.save: the outputs the manifest declares, as DIR/output_<i>.pb; the JSON object of files. */
static char *save(const char *out, const char *dir, const manifest *m, const values *got, sb *files) {
    char *sub = join_path(out, dir);
    make_dirs(sub);
    free(sub);
    for (size_t i = 0; i < m->n_outputs; i++) {
        const tp_tensor *t = value_of(got, m->outputs[i].name);
        if (!t) continue;
        char *rel = format("%s/output_%zu.pb", dir, i), *path = join_path(out, rel);
        tp_tensor named = *t;
        named.name = m->outputs[i].name;
        char why[1024];
        int rc = tp_save(path, &named, why, sizeof why);
        free(path);
        if (rc) {
            free(rel);
            return xstrdup(why);
        }
        sb_kv_str(files, m->outputs[i].name, rel);
        free(rel);
    }
    return NULL;
}

/* ---------------------------------------------------------------- logging: the verbose log */

static FILE *capture;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void ORT_API_CALL on_log(void *param, OrtLoggingLevel severity, const char *category, const char *logid,
                                const char *code_location, const char *message) {
    (void)param;
    static const char letters[] = "VIWEF";
    char letter = severity >= 0 && severity <= 4 ? letters[severity] : '?';
    pthread_mutex_lock(&log_lock);
    /* The line onnxruntime's own sink writes, so ci_onnx/observer/placement.py reads it unchanged. */
    FILE *to = capture ? capture : (severity >= ORT_LOGGING_LEVEL_WARNING ? stderr : NULL);
    if (to) fprintf(to, "[%c:%s:%s, %s] %s\n", letter, category, logid, code_location, message);
    pthread_mutex_unlock(&log_lock);
}

/* ---------------------------------------------------------------- execution providers */

/* The provider as the host names it (providers.toml): nothing about providers is kept here. */
typedef struct {
    const char *key;  /* providers.toml's key (--ep) */
    const char *ep;   /* the name onnxruntime registers (--ep-name) */
    const char *name; /* the name the C API appends it by (--ep-append); NULL for the CPU's */
} ep_info;

#define NNAPI "NNAPI" /* appended by a function of its own, which only Android builds export */

static void *library;

typedef OrtStatus *(ORT_API_CALL *nnapi_fn)(OrtSessionOptions *, uint32_t);

/* Appends the EP (nothing for cpu): NULL, or why the library cannot. */
static char *append_ep(OrtSessionOptions *so, const ep_info *ep) {
    if (!ep->name) return NULL;
    if (!strcmp(ep->name, NNAPI)) {
        /* Only Android builds export it; looked up, so one build runs against any library. */
        void *sym = dlsym(library, "OrtSessionOptionsAppendExecutionProvider_Nnapi");
        if (!sym) return xstrdup("this libonnxruntime has no OrtSessionOptionsAppendExecutionProvider_Nnapi");
        nnapi_fn fn;
        memcpy(&fn, &sym, sizeof fn);
        OrtStatus *st = fn(so, 0);
        return st ? status_message(st) : NULL;
    }
    OrtStatus *st = ort->SessionOptionsAppendExecutionProvider(so, ep->name, NULL, NULL, 0);
    return st ? status_message(st) : NULL;
}

typedef struct {
    const ep_info *ep;
    int with_ep;
    int strict;
    const char *profile; /* prefix, or NULL */
    int severity;
} session_config;

/* A session: NULL, or the runtime's message (*append_failed set when the EP could not be appended). */
static char *create_session(const char *model, const session_config *c, session *out, int *append_failed) {
    memset(out, 0, sizeof *out);
    OrtSessionOptions *so;
    OrtStatus *st = ort->CreateSessionOptions(&so);
    if (st) return status_message(st);
    char *err = NULL;
    if ((st = ort->SetSessionLogSeverityLevel(so, c->severity)) ||
        (c->severity == 0 && (st = ort->SetSessionLogVerbosityLevel(so, 0))) ||
        (c->strict && (st = ort->AddSessionConfigEntry(so, "session.disable_cpu_ep_fallback", "1"))) ||
        (c->profile && (st = ort->EnableProfiling(so, c->profile))))
        err = status_message(st);
    if (!err && c->with_ep && (err = append_ep(so, c->ep)) && append_failed) *append_failed = 1;
    if (!err && (st = ort->CreateSession(env, model, so, &out->sess))) err = status_message(st);
    ort->ReleaseSessionOptions(so);
    if (!err && (st = describe_session(out))) err = status_message(st);
    if (err) free_session(out);
    return err;
}

/* ---------------------------------------------------------------- memory */

static double status_mb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    double kb = -1;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':') {
            kb = strtod(line + n + 1, NULL);
            break;
        }
    fclose(f);
    return kb < 0 ? -1 : kb / 1024.0;
}

/* Resets VmHWM to the current RSS (Linux 4.0+), so that it then holds the peak while serving. */
static int reset_peak(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return 0;
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

typedef struct {
    const session *s;
    const prepared *p;
    size_t runs_each;
    double deadline;
    char *err;
    volatile int done;
} server;

static void *serve(void *arg) {
    server *sv = arg;
    size_t done = 0;
    while (!sv->err && (done < sv->runs_each || now_ms() < sv->deadline)) {
        sv->err = run_only(sv->s, sv->p->ins, sv->p->names, sv->p->n);
        done++;
    }
    pthread_mutex_lock(&log_lock);
    sv->done = 1;
    pthread_mutex_unlock(&log_lock);
    return NULL;
}

static int all_done(server *sv, size_t n) {
    int done = 1;
    pthread_mutex_lock(&log_lock);
    for (size_t i = 0; i < n; i++) done &= sv[i].done;
    pthread_mutex_unlock(&log_lock);
    return done;
}

/* ---------------------------------------------------------------- latency */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(const double *sorted, size_t n, double p) {
    double rank = p / 100.0 * (double)(n - 1); /* numpy's default (linear) interpolation */
    size_t lo = (size_t)rank, hi = lo + 1 < n ? lo + 1 : n - 1;
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - (double)lo);
}

/* ---------------------------------------------------------------- arguments */

typedef struct {
    const char *lib, *bundle, *target_id, *ep_key, *ep_name, *ep_append, *out;
    long latency_runs, memory_threads;
    size_t *sizes;
    size_t n_sizes;
    int strict;
} args;

static long parse_count(const char *flag, const char *v, long lo) {
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < lo || n > 1000000) usage("%s %s: not a whole number >= %ld", flag, v, lo);
    return n;
}

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

static void parse_args(int argc, char **argv, args *a) {
    memset(a, 0, sizeof *a);
    a->latency_runs = 20;
    a->memory_threads = 4;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "--strict-fallback")) {
            a->strict = 1;
            continue;
        }
        if (i + 1 >= argc) usage("%s needs a value", k);
        const char *v = argv[++i];
        if (!strcmp(k, "--lib")) a->lib = v;
        else if (!strcmp(k, "--bundle")) a->bundle = v;
        else if (!strcmp(k, "--target-id")) a->target_id = v;
        else if (!strcmp(k, "--ep")) a->ep_key = v;
        else if (!strcmp(k, "--ep-name")) a->ep_name = v;
        else if (!strcmp(k, "--ep-append")) a->ep_append = v;
        else if (!strcmp(k, "--out")) a->out = v;
        else if (!strcmp(k, "--latency-runs")) a->latency_runs = parse_count(k, v, 1);
        else if (!strcmp(k, "--memory-threads")) a->memory_threads = parse_count(k, v, 1);
        else if (!strcmp(k, "--batch-sizes")) {
            free(a->sizes);
            a->sizes = xcalloc(strlen(v) / 2 + 1, sizeof(size_t));
            a->n_sizes = 0;
            char *copy = xstrdup(v), *save_ptr = NULL;
            for (char *tok = strtok_r(copy, ",", &save_ptr); tok; tok = strtok_r(NULL, ",", &save_ptr))
                a->sizes[a->n_sizes++] = (size_t)parse_count(k, tok, 1);
            free(copy);
            qsort(a->sizes, a->n_sizes, sizeof(size_t), cmp_size);
        } else usage("unknown argument %s", k);
    }
    const char *missing = !a->lib ? "--lib" : !a->bundle ? "--bundle" : !a->target_id ? "--target-id"
                        : !a->ep_key ? "--ep" : !a->ep_name ? "--ep-name" : !a->out ? "--out" : NULL;
    if (missing) usage("%s is required", missing);
}

/* The provider the arguments name; a usage error where one other than the CPU's has no name to be
 * appended by (providers.toml's c_api). */
static ep_info find_ep(const args *a) {
    int is_cpu = !strcmp(a->ep_name, CPU_EP);
    if (!is_cpu && !a->ep_append)
        usage("--ep %s: %s has no --ep-append name (providers.toml's c_api) the C API appends it by", a->ep_key,
              a->ep_name);
    ep_info ep = {a->ep_key, a->ep_name, is_cpu ? NULL : a->ep_append};
    return ep;
}

/* ---------------------------------------------------------------- the observation */

typedef struct {
    sb outputs, run_errors, batch_outputs, batch_errors, batch_reference, notes, unmeasured, latency;
    sb sweep_outputs, sweep_errors, sweep_latency;
    char *load_error, *strict_fallback_error, *batch_reference_error;
    double session_create_ms, peak_rss_mb, rss_before_mb;
    long memory_threads;
} observation;

static void write_observation(const args *a, const char *version, const char *available, const char *requested,
                              const char *registered, observation *o) {
    struct utsname u;
    char platform[512] = "unknown";
    if (uname(&u) == 0) snprintf(platform, sizeof platform, "%s-%s-%s", u.sysname, u.release, u.machine);
    sb j = {0};
    sb_printf(&j, "{\n  \"schema_version\": 1,\n  \"target_id\": ");
    sb_json_str(&j, a->target_id);
    sb_printf(&j, ",\n  \"environment\": {\"runtime_version\": ");
    sb_json_str(&j, version);
    sb_printf(&j, ", \"providers_available\": [%s], \"providers_registered\": [%s], \"platform\": ",
              available, registered);
    sb_json_str(&j, platform);
    sb_printf(&j, ", \"runner\": \"ort-native\", \"runner_version\": \"observe.c (ORT C API %d)\"},\n",
              OBSERVE_API_VERSION);
    sb_printf(&j, "  \"providers_requested\": [%s],\n  \"load_error\": ", requested);
    sb_json_str(&j, o->load_error ? o->load_error : "");
    sb_printf(&j, ",\n  \"strict_fallback_error\": ");
    sb_json_str(&j, o->strict_fallback_error ? o->strict_fallback_error : "");
    sb_printf(&j, ",\n  \"outputs\": {%s},\n  \"run_errors\": {%s},\n", o->outputs.s ? o->outputs.s : "",
              o->run_errors.s ? o->run_errors.s : "");
    sb_printf(&j, "  \"batch_outputs\": {%s},\n  \"batch_errors\": {%s},\n  \"batch_reference\": {%s},\n",
              o->batch_outputs.s ? o->batch_outputs.s : "", o->batch_errors.s ? o->batch_errors.s : "",
              o->batch_reference.s ? o->batch_reference.s : "");
    sb_printf(&j, "  \"batch_reference_error\": ");
    sb_json_str(&j, o->batch_reference_error ? o->batch_reference_error : "");
    sb_printf(&j, ",\n  \"latency\": [%s],\n", o->latency.s ? o->latency.s : "");
    sb_printf(&j, "  \"sweep_outputs\": {%s},\n  \"sweep_errors\": {%s},\n  \"sweep_latency\": [%s],\n",
              o->sweep_outputs.s ? o->sweep_outputs.s : "", o->sweep_errors.s ? o->sweep_errors.s : "",
              o->sweep_latency.s ? o->sweep_latency.s : "");
    if (o->session_create_ms >= 0) sb_printf(&j, "  \"session_create_ms\": %.3f,\n", o->session_create_ms);
    if (o->peak_rss_mb >= 0) sb_printf(&j, "  \"peak_rss_mb\": %.2f,\n", o->peak_rss_mb);
    if (o->rss_before_mb >= 0) sb_printf(&j, "  \"rss_before_mb\": %.2f,\n", o->rss_before_mb);
    sb_printf(&j, "  \"memory_threads\": %ld,\n  \"notes\": [%s],\n  \"unmeasured\": {%s}\n}\n", o->memory_threads,
              o->notes.s ? o->notes.s : "", o->unmeasured.s ? o->unmeasured.s : "");
    char *path = join_path(a->out, "observation.json");
    FILE *f = fopen(path, "w");
    if (!f || fwrite(j.s, 1, j.len, f) != j.len || fclose(f)) usage("%s: cannot write: %s", path, strerror(errno));
    free(path);
    free(j.s);
}

static void set_error(sb *obj, const char *key, const char *message) {
    char *m = one_line(message);
    sb_kv_str(obj, key, m);
    free(m);
}

/* The parity runs: every test data set, outputs saved. */
static void parity_runs(const session *s, const manifest *m, const args *a, observation *o) {
    for (size_t d = 0; d < m->n_sets; d++) {
        values feeds, got;
        char *err = NULL;
        if (!read_inputs(m, a->bundle, m->sets[d], &feeds, &err)) {
            err = run_set(s, m, &feeds, &got);
            free_values(&feeds);
        }
        if (!err) {
            sb files = {0};
            err = save(a->out, m->sets[d], m, &got, &files);
            free_values(&got);
            if (!err) {
                sb_entry(&o->outputs, m->sets[d]);
                sb_printf(&o->outputs, "{%s}", files.s ? files.s : "");
            }
            free(files.s);
        }
        if (err) set_error(&o->run_errors, m->sets[d], err);
        free(err);
    }
}

/* Each served batch size in one run, and the same samples one at a time as its reference
 * (ci_onnx/observer/ort.py _batch_runs: the same semantics). Returns the sizes that ran. */
static size_t batch_runs(const session *s, const manifest *m, const args *a, observation *o, const values *data,
                         size_t *working) {
    size_t n_working = 0, max = a->sizes[a->n_sizes - 1];
    values samples;
    char *err = NULL;
    if (take_values(data, 0, max, &samples, &err)) {
        o->batch_reference_error = format("reading the inputs failed: %s", err);
        free(err);
        return 0;
    }
    values *singles = xcalloc(max, sizeof(values));
    size_t n_singles = 0;
    for (size_t i = 0; i < max && !err; i++) {
        values one;
        if (take_values(&samples, i, 1, &one, &err)) break;
        err = run(s, &one, &singles[i]);
        free_values(&one);
        if (!err) n_singles++;
    }
    if (err) {
        char *m1 = one_line(err);
        o->batch_reference_error = format("single-sample runs failed: %s", m1);
        free(m1);
        free(err);
        err = NULL;
    } else {
        values stacked = {0};
        stacked.names = xcalloc(singles[0].n, sizeof(char *));
        stacked.t = xcalloc(singles[0].n, sizeof(tp_tensor));
        tp_tensor **each = xcalloc(max, sizeof(tp_tensor *));
        for (size_t k = 0; k < singles[0].n && !err; k++) {
            const spec *sp = NULL;
            for (size_t q = 0; q < m->n_outputs; q++)
                if (!strcmp(m->outputs[q].name, singles[0].names[k])) sp = &m->outputs[q];
            if (!sp || !batched_output(m, sp)) continue;
            for (size_t i = 0; i < max; i++) each[i] = &singles[i].t[k];
            if (stack(each, max, &stacked.t[stacked.n], &err)) break;
            stacked.names[stacked.n++] = xstrdup(singles[0].names[k]);
        }
        free(each);
        if (!err) err = save(a->out, "batch_reference", m, &stacked, &o->batch_reference);
        if (err) {
            char *m1 = one_line(err);
            o->batch_reference_error = format("the single-sample outputs do not stack on axis 0: %s", m1);
            free(m1);
            free(err);
            free(o->batch_reference.s);
            memset(&o->batch_reference, 0, sizeof o->batch_reference);
        }
        free_values(&stacked);
    }
    for (size_t i = 0; i < n_singles; i++) free_values(&singles[i]);
    free(singles);
    for (size_t k = 0; k < a->n_sizes; k++) {
        size_t n = a->sizes[k];
        char key[32];
        snprintf(key, sizeof key, "%zu", n);
        const char *frozen = NULL;
        int64_t frozen_at = 0;
        for (size_t i = 0; i < s->n_in && !frozen; i++)
            if (s->in_dim0[i] >= 0 && (size_t)s->in_dim0[i] != n) frozen = s->in_names[i], frozen_at = s->in_dim0[i];
        if (frozen) {
            char *why = format("the batch axis of input '%s' is fixed at %lld in the model, so it cannot serve "
                               "batch %zu; export it with a dynamic batch axis (dynamic_axes)",
                               frozen, (long long)frozen_at, n);
            set_error(&o->batch_errors, key, why);
            free(why);
            continue;
        }
        values feeds, got;
        err = NULL;
        if (!take_values(&samples, 0, n, &feeds, &err)) {
            err = run(s, &feeds, &got);
            free_values(&feeds);
        }
        if (!err) {
            char dir[64];
            snprintf(dir, sizeof dir, "batch_%zu", n);
            sb files = {0};
            err = save(a->out, dir, m, &got, &files);
            free_values(&got);
            if (!err) {
                sb_entry(&o->batch_outputs, key);
                sb_printf(&o->batch_outputs, "{%s}", files.s ? files.s : "");
                working[n_working++] = n;
            }
            free(files.s);
        }
        if (err) set_error(&o->batch_errors, key, err);
        free(err);
    }
    free_values(&samples);
    return n_working;
}

/* `warmups` runs, then `runs` timed runs of `p`, sorted into `times`. */
static char *timed_runs(const session *s, const prepared *p, long warmups, long runs, double *times) {
    char *err = NULL;
    for (long i = 0; i < warmups && !err; i++) err = run_only(s, p->ins, p->names, p->n);
    for (long i = 0; i < runs && !err; i++) {
        double t0 = now_ms();
        err = run_only(s, p->ins, p->names, p->n);
        times[i] = now_ms() - t0;
    }
    if (!err) qsort(times, (size_t)runs, sizeof(double), cmp_double);
    return err;
}

/* A LatencyStat of `batch` items a run, unclosed: a sweep point adds its own members. */
static void latency_stat(sb *out, size_t batch, const double *times, long runs) {
    size_t n = (size_t)runs;
    sb_entry(out, NULL);
    sb_printf(out, "{\"batch_size\": %zu, \"p50_ms\": %.4f, \"p90_ms\": %.4f, \"p99_ms\": %.4f, \"runs\": %ld",
              batch, round_to(percentile(times, n, 50), 4), round_to(percentile(times, n, 90), 4),
              round_to(percentile(times, n, 99), 4), runs);
}

/* The bundle's sweep points (ci_onnx/observer/sweep_runs.py: the same semantics): each run once for
 * its outputs (that first run at the shape timed alone), then timed like a batch size; the runtime's
 * message where one fails, so the judge names the point and the node. */
static void sweep_runs(const session *s, const manifest *m, const args *a, observation *o) {
    double *times = xcalloc((size_t)a->latency_runs, sizeof(double));
    for (size_t k = 0; k < m->n_sweeps; k++) {
        const sweep_point *sw = &m->sweeps[k];
        if (!sw->directory[0]) continue; /* no reference there: the judge says why */
        values feeds = {0}, got;
        prepared p = {0};
        char *err = NULL;
        double first = 0;
        if (!read_inputs(m, a->bundle, sw->directory, &feeds, &err)) {
            double t0 = now_ms();
            err = run(s, &feeds, &got);
            first = now_ms() - t0;
            if (!err) {
                sb files = {0};
                err = save(a->out, sw->directory, m, &got, &files);
                free_values(&got);
                if (!err) {
                    sb_entry(&o->sweep_outputs, sw->directory);
                    sb_printf(&o->sweep_outputs, "{%s}", files.s ? files.s : "");
                }
                free(files.s);
            }
        }
        /* as many timed runs as fit the budget by the first run, at least one (sweep_runs) */
        double fit = SWEEP_BUDGET_MS / (first > 1e-3 ? first : 1e-3);
        long timed = fit < 1 ? 1 : (fit < (double)a->latency_runs ? (long)fit : a->latency_runs);
        long warm = timed - 1 < WARMUP_RUNS ? timed - 1 : WARMUP_RUNS;
        if (!err) err = prepare(&feeds, &p);
        if (!err) err = timed_runs(s, &p, warm, timed, times);
        if (err) {
            set_error(&o->sweep_errors, sw->directory, err);
        } else {
            latency_stat(&o->sweep_latency, (size_t)sw->count, times, timed);
            sb_printf(&o->sweep_latency, ", \"point\": ");
            sb_json_str(&o->sweep_latency, sw->label);
            sb_printf(&o->sweep_latency, ", \"first_ms\": %.4f}", round_to(first, 4));
        }
        free(err);
        free_prepared(&p);
        free_values(&feeds);
    }
    free(times);
}

static void latency_and_memory(const session *s, const args *a, observation *o, const values *data,
                               const size_t *working, size_t n_working) {
    double *times = xcalloc((size_t)a->latency_runs, sizeof(double));
    for (size_t k = 0; k < n_working; k++) {
        values feeds;
        prepared p = {0};
        char *err = NULL;
        if (take_values(data, 0, working[k], &feeds, &err)) {
            free(err);
            continue;
        }
        err = prepare(&feeds, &p);
        if (!err) err = timed_runs(s, &p, WARMUP_RUNS, a->latency_runs, times);
        if (err) {
            char *why = format("timing batch %zu failed: %s", working[k], err);
            sb_entry(&o->notes, NULL);
            sb_json_str(&o->notes, why);
            free(why);
        } else {
            latency_stat(&o->latency, working[k], times, a->latency_runs);
            sb_printf(&o->latency, "}");
        }
        free(err);
        free_prepared(&p);
        free_values(&feeds);
    }
    free(times);
    if (!n_working) return;

    /* Peak RSS while memory_threads threads serve the largest batch, for at least 0.25 s. */
    values feeds;
    prepared p = {0};
    char *err = NULL;
    if (take_values(data, 0, working[n_working - 1], &feeds, &err)) {
        sb_kv_str(&o->unmeasured, "memory", err);
        free(err);
        return;
    }
    err = prepare(&feeds, &p);
    double before = status_mb("VmRSS");
    int reset = before >= 0 && reset_peak();
    size_t threads = (size_t)a->memory_threads;
    server *sv = xcalloc(threads, sizeof(server));
    pthread_t *tid = xcalloc(threads, sizeof(pthread_t));
    double peak = before, deadline = now_ms() + 250.0;
    size_t started = 0;
    for (size_t i = 0; i < threads && !err; i++) {
        sv[i] = (server){s, &p, (size_t)(a->latency_runs / 4 > 2 ? a->latency_runs / 4 : 2), deadline, NULL, 0};
        if (pthread_create(&tid[i], NULL, serve, &sv[i])) break;
        started++;
    }
    while (!all_done(sv, started)) {
        double rss = status_mb("VmRSS");
        if (rss > peak) peak = rss;
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    for (size_t i = 0; i < started; i++) pthread_join(tid[i], NULL);
    for (size_t i = 0; i < started && !err; i++)
        if (sv[i].err) err = xstrdup(sv[i].err);
    for (size_t i = 0; i < started; i++) free(sv[i].err);
    free(sv);
    free(tid);
    if (err || started < threads) {
        char *why = format("serving the largest batch failed: %s", err ? err : "a thread did not start");
        set_error(&o->unmeasured, "memory", why);
        free(why);
    } else if (before < 0) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
#ifdef __APPLE__
        o->peak_rss_mb = round_to((double)ru.ru_maxrss / (1 << 20), 2);
#else
        o->peak_rss_mb = round_to((double)ru.ru_maxrss / 1024.0, 2);
#endif
        o->memory_threads = a->memory_threads;
        sb_entry(&o->notes, NULL);
        sb_json_str(&o->notes, "peak RSS is the process lifetime peak (getrusage ru_maxrss), an upper bound");
    } else {
        double hwm = reset ? status_mb("VmHWM") : -1, now = status_mb("VmRSS");
        if (hwm > peak) peak = hwm;
        if (now > peak) peak = now;
        o->peak_rss_mb = round_to(peak, 2);
        o->rss_before_mb = round_to(before, 2);
        o->memory_threads = a->memory_threads;
        if (!reset) {
            sb_entry(&o->notes, NULL);
            sb_json_str(&o->notes, "VmHWM could not be reset (/proc/self/clear_refs): peak RSS is sampled every 2 ms");
        }
    }
    free(err);
    free_prepared(&p);
    free_values(&feeds);
}

/* The verbose log of a session created at verbose level, through the logging callback. */
static void verbose_log(const char *model, const session_config *main_config, const args *a, observation *o) {
    char *path = join_path(a->out, "verbose.log");
    FILE *f = fopen(path, "w");
    if (!f) {
        sb_entry(&o->notes, NULL);
        sb_json_str(&o->notes, "verbose.log could not be written");
        free(path);
        return;
    }
    session_config c = *main_config;
    c.profile = NULL;
    c.severity = 0;
    session s;
    pthread_mutex_lock(&log_lock);
    capture = f;
    pthread_mutex_unlock(&log_lock);
    char *err = create_session(model, &c, &s, NULL);
    pthread_mutex_lock(&log_lock);
    capture = NULL;
    pthread_mutex_unlock(&log_lock);
    fclose(f);
    if (err) {
        char *why = format("the verbose session failed: %s", err);
        sb_entry(&o->notes, NULL);
        sb_json_str(&o->notes, why);
        free(why);
        free(err);
    } else {
        free_session(&s);
    }
    free(path);
}

static void end_profiling(session *s, const args *a, observation *o) {
    char *file = NULL;
    OrtStatus *st = ort->SessionEndProfiling(s->sess, allocator, &file);
    if (st) {
        char *m = status_message(st);
        sb_entry(&o->notes, NULL);
        sb_json_str(&o->notes, m);
        free(m);
        return;
    }
    char *to = join_path(a->out, "native_profile.json");
    if (file && rename(file, to)) {
        sb_entry(&o->notes, NULL);
        sb_json_str(&o->notes, "the profile trace could not be moved into the output directory");
    }
    free(to);
    if (file) ignore(ort->AllocatorFree(allocator, file));
}

int main(int argc, char **argv) {
    args a;
    parse_args(argc, argv, &a);
    const ep_info found = find_ep(&a), *ep = &found;
    make_dirs(a.out);
    manifest m;
    read_manifest(a.bundle, &m);

    library = dlopen(a.lib, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char *why = dlerror();
        usage("cannot load libonnxruntime from %s: %s", a.lib, why ? why : "unknown error");
    }
    void *sym = dlsym(library, "OrtGetApiBase");
    if (!sym) usage("%s has no OrtGetApiBase: not a libonnxruntime", a.lib);
    const OrtApiBase *(ORT_API_CALL *get_base)(void);
    memcpy(&get_base, &sym, sizeof get_base);
    const OrtApiBase *base = get_base();
    const char *version = base->GetVersionString();
    ort = base->GetApi(OBSERVE_API_VERSION);
    if (!ort)
        usage("libonnxruntime %s at %s does not offer ORT C API %d: the native runner needs onnxruntime 1.%d or newer",
              version, a.lib, OBSERVE_API_VERSION, OBSERVE_API_VERSION);

    OrtStatus *st;
    if ((st = ort->CreateEnvWithCustomLogger(on_log, NULL, ORT_LOGGING_LEVEL_WARNING, "onnx-gate", &env)) ||
        (st = ort->GetAllocatorWithDefaultOptions(&allocator)) ||
        (st = ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &cpu_memory)))
        usage("libonnxruntime %s: %s", version, ort->GetErrorMessage(st));

    sb available = {0}, requested = {0}, registered = {0};
    char **names = NULL;
    int n_names = 0;
    if (!(st = ort->GetAvailableProviders(&names, &n_names))) {
        for (int i = 0; i < n_names; i++) {
            sb_entry(&available, NULL);
            sb_json_str(&available, names[i]);
        }
        ignore(ort->ReleaseAvailableProviders(names, n_names));
    } else {
        ort->ReleaseStatus(st);
    }
    int is_cpu = !ep->name;
    sb_json_str(&requested, ep->ep);
    if (!is_cpu) sb_printf(&requested, ", \"%s\"", CPU_EP);

    observation o;
    memset(&o, 0, sizeof o);
    o.session_create_ms = o.peak_rss_mb = o.rss_before_mb = -1;
    char *model = join_path(a.bundle, "model.onnx"), *profile = join_path(a.out, "native_profile");
    session s;
    session_config config = {ep, !is_cpu, a.strict && !is_cpu, profile, 3};
    int append_failed = 0;
    double start = now_ms();
    char *err = create_session(model, &config, &s, &append_failed);
    if (err && config.strict) {
        o.strict_fallback_error = err;
        config.strict = 0;
        start = now_ms();
        append_failed = 0;
        err = create_session(model, &config, &s, &append_failed);
    }
    if (err && append_failed) {
        /* As onnxruntime's Python API does with a provider the package lacks: a CPU session, and the
         * judge's provider check says what is missing. */
        char *why = format("%s could not be appended (%s); the session runs on %s alone", ep->ep, err, CPU_EP);
        sb_entry(&o.notes, NULL);
        sb_json_str(&o.notes, why);
        free(why);
        free(err);
        config.with_ep = 0;
        start = now_ms();
        err = create_session(model, &config, &s, NULL);
    }
    if (err) {
        o.load_error = err;
    } else {
        o.session_create_ms = round_to(now_ms() - start, 3);
        sb_json_str(&registered, config.with_ep ? ep->ep : CPU_EP);
        if (config.with_ep && !is_cpu) sb_printf(&registered, ", \"%s\"", CPU_EP);

        parity_runs(&s, &m, &a, &o);
        end_profiling(&s, &a, &o);
        verbose_log(model, &config, &a, &o);
        values data = {0};
        size_t *working = xcalloc(a.n_sizes, sizeof(size_t)), n_working = 0;
        char *why = NULL;
        if (a.n_sizes && m.n_sets && !batch_axis_problem(&m)) {
            if (read_inputs(&m, a.bundle, m.sets[0], &data, &why)) {
                o.batch_reference_error = format("reading the inputs failed: %s", why);
                free(why);
            } else {
                n_working = batch_runs(&s, &m, &a, &o, &data, working);
            }
        }
        latency_and_memory(&s, &a, &o, &data, working, n_working);
        sweep_runs(&s, &m, &a, &o); /* after the memory figure, as the python observer does */
        free(working);
        free_values(&data);
        free_session(&s);
    }
    write_observation(&a, version, available.s ? available.s : "", requested.s, registered.s ? registered.s : "", &o);

    free(o.outputs.s), free(o.run_errors.s), free(o.batch_outputs.s), free(o.batch_errors.s);
    free(o.batch_reference.s), free(o.notes.s), free(o.unmeasured.s), free(o.latency.s);
    free(o.sweep_outputs.s), free(o.sweep_errors.s), free(o.sweep_latency.s);
    free(o.load_error), free(o.strict_fallback_error), free(o.batch_reference_error);
    free(available.s), free(requested.s), free(registered.s);
    free(model), free(profile), free(a.sizes);
    free_manifest(&m);
    ort->ReleaseMemoryInfo(cpu_memory);
    ort->ReleaseEnv(env);
    return 0;
}
