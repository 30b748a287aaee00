/* The bare baseline of bench/bench_native.py: the native runner's ONNX Runtime work with nothing
 * around it. One CPU session with profiling on for the parity runs (then ended), every data set run,
 * the first max(batch) samples one at a time and each batch size in one run, 3 warm-up + N timed
 * runs per batch size, 4 threads serving the largest batch. Inputs are raw little-endian files
 * prepared beforehand (spec.txt), the cheapest reading there is; nothing is written or compared.
 *   bare_native LIB MODEL SPEC_TXT RUNS
 * spec.txt: "sizes N1 N2 ..." then per data set "set", then per input "input NAME CODE NDIM D0 D1 ... FILE".
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxruntime_c_api.h"

static const OrtApi *ort;
static OrtSession *sess;
static OrtMemoryInfo *mem;
static char *out_names[16];
static size_t n_out;

typedef struct {
    char name[128];
    int code;
    size_t ndim, elem;
    int64_t dims[8];
    char *data;
} input;

static void check(OrtStatus *st) {
    if (st) {
        fprintf(stderr, "bare_native: %s\n", ort->GetErrorMessage(st));
        exit(1);
    }
}

static size_t elem_size(int code) { return code == 7 || code == 11 ? 8 : code == 1 || code == 6 ? 4 : 1; }

/* Runs inputs with rows [start, start + n) of each (cycling), outputs discarded. */
static void run(const input *in, size_t n_in, size_t start, size_t n) {
    OrtValue *vals[16], *outs[16] = {0};
    const char *names[16];
    char *bufs[16];
    for (size_t i = 0; i < n_in; i++) {
        size_t per = in[i].elem / (size_t)in[i].dims[0] * elem_size(in[i].code);
        bufs[i] = malloc(per * n);
        for (size_t r = 0; r < n; r++) memcpy(bufs[i] + r * per, in[i].data + ((start + r) % (size_t)in[i].dims[0]) * per, per);
        int64_t dims[8];
        memcpy(dims, in[i].dims, sizeof dims);
        dims[0] = (int64_t)n;
        check(ort->CreateTensorWithDataAsOrtValue(mem, bufs[i], per * n, dims, in[i].ndim,
                                                  (ONNXTensorElementDataType)in[i].code, &vals[i]));
        names[i] = in[i].name;
    }
    check(ort->Run(sess, NULL, names, (const OrtValue *const *)vals, n_in, (const char *const *)out_names, n_out, outs));
    for (size_t i = 0; i < n_out; i++) ort->ReleaseValue(outs[i]);
    for (size_t i = 0; i < n_in; i++) ort->ReleaseValue(vals[i]), free(bufs[i]);
}

typedef struct {
    const input *in;
    size_t n_in, n, runs;
} job;

static void *serve(void *arg) {
    job *j = arg;
    for (size_t i = 0; i < j->runs; i++) run(j->in, j->n_in, 0, j->n);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 5) return fprintf(stderr, "usage: bare_native LIB MODEL SPEC RUNS\n"), 2;
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) return fprintf(stderr, "bare_native: %s\n", dlerror()), 1;
    const OrtApiBase *(*get_base)(void);
    void *sym = dlsym(lib, "OrtGetApiBase");
    memcpy(&get_base, &sym, sizeof get_base);
    ort = get_base()->GetApi(12);
    size_t runs = (size_t)atoi(argv[4]);
    OrtEnv *env;
    OrtSessionOptions *so;
    OrtAllocator *alloc;
    check(ort->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "bare", &env));
    check(ort->CreateSessionOptions(&so));
    check(ort->EnableProfiling(so, "/tmp/bare-native-profile"));
    check(ort->CreateSession(env, argv[2], so, &sess));
    check(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mem));
    check(ort->GetAllocatorWithDefaultOptions(&alloc));
    check(ort->SessionGetOutputCount(sess, &n_out));
    for (size_t i = 0; i < n_out && i < 16; i++) check(ort->SessionGetOutputName(sess, i, alloc, &out_names[i]));

    FILE *spec = fopen(argv[3], "r");
    if (!spec) return fprintf(stderr, "bare_native: no spec\n"), 1;
    input sets[8][8];
    size_t n_sets = 0, n_in = 0, sizes[8], n_sizes = 0;
    char word[64];
    while (fscanf(spec, "%63s", word) == 1) {
        if (!strcmp(word, "sizes")) {
            while (n_sizes < 8 && fscanf(spec, "%zu", &sizes[n_sizes]) == 1) n_sizes++;
        } else if (!strcmp(word, "set")) {
            n_sets++;
            n_in = 0;
        } else if (!strcmp(word, "input")) {
            input *in = &sets[n_sets - 1][n_in++];
            char file[4096];
            if (fscanf(spec, "%127s %d %zu", in->name, &in->code, &in->ndim) != 3) return 1;
            in->elem = 1;
            for (size_t d = 0; d < in->ndim; d++) {
                long long v;
                if (fscanf(spec, "%lld", &v) != 1) return 1;
                in->dims[d] = v;
                in->elem *= (size_t)v;
            }
            if (fscanf(spec, "%4095s", file) != 1) return 1;
            FILE *f = fopen(file, "rb");
            size_t bytes = in->elem * elem_size(in->code);
            in->data = malloc(bytes);
            if (!f || fread(in->data, 1, bytes, f) != bytes) return fprintf(stderr, "bare_native: %s\n", file), 1;
            fclose(f);
        }
    }
    fclose(spec);
    for (size_t s = 0; s < n_sets; s++) run(sets[s], n_in, 0, (size_t)sets[s][0].dims[0]);
    char *profile;
    check(ort->SessionEndProfiling(sess, alloc, &profile));
    remove(profile);
    check(ort->AllocatorFree(alloc, profile));
    size_t max = n_sizes ? sizes[n_sizes - 1] : 0;
    for (size_t i = 0; i < max; i++) run(sets[0], n_in, i, 1);
    for (size_t k = 0; k < n_sizes; k++) run(sets[0], n_in, 0, sizes[k]);
    for (size_t k = 0; k < n_sizes; k++)
        for (size_t i = 0; i < 3 + runs; i++) run(sets[0], n_in, 0, sizes[k]);
    if (n_sizes) {
        pthread_t t[4];
        job j = {sets[0], n_in, max, runs / 4 > 2 ? runs / 4 : 2};
        for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, serve, &j);
        for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    }
    printf("ok\n");
    return 0;
}
