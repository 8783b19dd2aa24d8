/* Compiled helpers of the block path, each the exact equal of a pure-Python one it stands in for.
 * Optional: the package works without them (setup.py builds this only where a compiler is present).
 *
 * decode_scan(block, lo, hi, counts): the decode-line statistics of a block in one pass (facts/decode.py).
 * It reads block[lo:hi] as these regexes' findall would, and gives back
 * exactly what facts/decode.py's pure-Python path computes from them:
 *   throughputs  gen throughput \(token/s\): ([0-9.]+)
 *                a value printed with two decimals ([0-9]+\.[0-9][0-9]) whose hundredths index the
 *                uint64 buffer `counts` is counted there; every other one is returned as printed;
 *   queue        gen throughput \(token/s\): [0-9.]+, #queue-req: (\d+)
 *   usage        Decode batch(?: \[\d+\])?[,.] #running-req: \d+, #(?:full |gpu )?token: \d+,
 *                (?:full |gpu )?token usage: ([0-9.]+)
 *                the largest of each as printed (text that Python's float() refuses or reads as
 *                infinite is passed over, as facts/decode.py's _number does).
 *   graphs       the offsets of the first "cuda graph: False, " and "cuda graph: True, " right
 *                before a throughput's literal (-1: none).
 * Returns (uncounted throughput texts, usage text or None, queue text or None, graphs off, graphs on).
 *
 * newlines(block): block.count(b"\n") (read/reader.py; CPython's count of one byte is a plain loop).
 *
 * roomy_heap(): glibc only: serve blocks of a few MB from the heap and keep freed memory there, instead
 * of an mmap and munmap per block, whose page faults cost as much as reading the file (pipeline/split.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static const char TP[] = "gen throughput (token/s): ";
static const char QUEUE[] = ", #queue-req: ";
static const char DECODE[] = "Decode batch";
static const char *GRAPH[2] = {"cuda graph: False, ", "cuda graph: True, "};

/* The first occurrence of needle in [p, end), or NULL: memchr for its byte k (one that is rare in
 * logs), then the whole needle around it (memmem is not on every platform). */
static const char *find(const char *p, const char *end, const char *needle, size_t n, size_t k) {
    const char rare = needle[k];
    while (end - p >= (Py_ssize_t)n) {
        const char *c = memchr(p + k, rare, (size_t)(end - p) - n + 1);
        if (c == NULL)
            return NULL;
        if (memcmp(c - k, needle, n) == 0)
            return c - k;
        p = c - k + 1;
    }
    return NULL;
}

static int starts(const char *p, const char *end, const char *lit) {
    size_t n = strlen(lit);
    return end - p >= (Py_ssize_t)n && memcmp(p, lit, n) == 0;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static const char *digits(const char *p, const char *end) {
    while (p < end && is_digit(*p))
        p++;
    return p;
}

static const char *number_run(const char *p, const char *end) { /* [0-9.]* */
    while (p < end && (is_digit(*p) || *p == '.'))
        p++;
    return p;
}

/* A run of [0-9.] that Python's float() reads as a finite number: one dot at most, a digit, and
 * below float's overflow (checked by Python's own parser only for a long integer part). */
static int is_number(const char *p, const char *q) {
    int dots = 0;
    const char *c, *whole = p;
    for (c = p; c < q; c++)
        dots += *c == '.';
    if (dots > 1 || q - p == dots)
        return 0;
    while (whole < q && *whole == '0')
        whole++;
    if (q - whole > 300) {
        char *buf = PyMem_Malloc((size_t)(q - p) + 1), *stop = NULL;
        double v;
        int ok;
        if (buf == NULL)
            return 0;
        memcpy(buf, p, (size_t)(q - p));
        buf[q - p] = '\0';
        v = PyOS_string_to_double(buf, &stop, NULL);
        ok = !(v == -1.0 && PyErr_Occurred()) && stop == buf + (q - p) && isfinite(v);
        PyErr_Clear();
        PyMem_Free(buf);
        return ok;
    }
    return 1;
}

/* The order of two numbers as decimal text (is_number's): <0, 0, >0. Exact where floats may tie;
 * the summary reads the peak back through float(), so a tie broken either way prints the same. */
static int compare(const char *a, const char *a_end, const char *b, const char *b_end) {
    const char *ad, *bd;
    Py_ssize_t al, bl, i;
    int c;
    while (a < a_end && *a == '0')
        a++;
    while (b < b_end && *b == '0')
        b++;
    ad = memchr(a, '.', (size_t)(a_end - a));
    bd = memchr(b, '.', (size_t)(b_end - b));
    al = (ad ? ad : a_end) - a;
    bl = (bd ? bd : b_end) - b;
    if (al != bl)
        return al < bl ? -1 : 1;
    c = memcmp(a, b, (size_t)al);
    if (c)
        return c;
    a = ad ? ad + 1 : a_end; /* the fractions, zeros past the shorter one */
    b = bd ? bd + 1 : b_end;
    for (i = 0; a + i < a_end || b + i < b_end; i++) {
        char x = a + i < a_end ? a[i] : '0', y = b + i < b_end ? b[i] : '0';
        if (x != y)
            return x < y ? -1 : 1;
    }
    return 0;
}

typedef struct {
    const char *p, *q; /* the text of the largest value so far */
} Peak;

static void consider(Peak *peak, const char *p, const char *q) {
    if (peak->p != NULL && compare(p, q, peak->p, peak->q) <= 0)
        return;
    if (is_number(p, q)) {
        peak->p = p;
        peak->q = q;
    }
}

static PyObject *peak_text(Peak *peak) {
    if (peak->p == NULL)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize(peak->p, peak->q - peak->p);
}

/* Past a pool's name ("full " / "gpu "), if one is there. */
static const char *pool(const char *p, const char *end) {
    if (starts(p, end, "full "))
        return p + 5;
    return starts(p, end, "gpu ") ? p + 4 : p;
}

/* `label`, digits, `after`: the position past `after`, or NULL where the text is otherwise. */
static const char *count_field(const char *p, const char *end, const char *label, const char *after) {
    const char *q;
    if (!starts(p, end, label))
        return NULL;
    p += strlen(label);
    q = digits(p, end);
    if (q == p || !starts(q, end, after))
        return NULL;
    return q + strlen(after);
}

/* After "Decode batch": the token usage's text, or NULL where the usage regex does not match. */
static const char *usage_at(const char *p, const char *end, const char **usage_end) {
    const char *q;
    if (starts(p, end, " [")) {
        q = digits(p + 2, end);
        if (q > p + 2 && q < end && *q == ']')
            p = q + 1;
    }
    if (p >= end || (*p != ',' && *p != '.'))
        return NULL;
    p = count_field(p + 1, end, " #running-req: ", ", #");
    if (p == NULL || (p = count_field(pool(p, end), end, "token: ", ", ")) == NULL)
        return NULL;
    p = pool(p, end);
    if (!starts(p, end, "token usage: "))
        return NULL;
    p += 13;
    q = number_run(p, end);
    if (q == p)
        return NULL;
    *usage_end = q;
    return p;
}

/* The hundredths of a text that is [0-9]+\.[0-9][0-9], if below `limit`; -1 otherwise. */
static Py_ssize_t cents_of(const char *p, const char *q, Py_ssize_t limit) {
    Py_ssize_t v = 0;
    if (q - p < 4 || q[-3] != '.' || !is_digit(q[-2]) || !is_digit(q[-1]))
        return -1;
    for (const char *c = p; c < q; c++) {
        if (c == q - 3)
            continue;
        if (!is_digit(*c))
            return -1;
        v = v * 10 + (*c - '0');
        if (v >= limit)
            return -1;
    }
    return v;
}

static PyObject *decode_scan(PyObject *self, PyObject *args) {
    Py_buffer block, counts;
    Py_ssize_t lo, hi;
    PyObject *others = NULL, *usage = NULL, *queue = NULL, *result = NULL;
    Peak usage_peak = {NULL, NULL}, queue_peak = {NULL, NULL};
    Py_ssize_t graph[2] = {-1, -1};
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nnw*", &block, &lo, &hi, &counts))
        return NULL;
    if (counts.itemsize != 8 || counts.len % 8) {
        PyErr_SetString(PyExc_ValueError, "counts must be a buffer of 8-byte counts");
        goto done;
    }
    if (lo < 0)
        lo = 0;
    if (hi > block.len)
        hi = block.len;
    others = PyList_New(0);
    if (others == NULL)
        goto done;
    {
        const char *base = block.buf, *end = base + hi, *p = base + (lo < hi ? lo : hi);
        uint64_t *cells = counts.buf;
        Py_ssize_t size = counts.len / 8;
        const size_t tp_len = sizeof TP - 1, queue_len = sizeof QUEUE - 1;
        /* Throughputs and queues. */
        while ((p = find(p, end, TP, tp_len, 15)) != NULL) {
            const char *v = p + tp_len, *w = number_run(v, end);
            Py_ssize_t c;
            for (int on = 0; on < 2; on++) {
                size_t n = strlen(GRAPH[on]);
                if (graph[on] < 0 && p - (base + lo) >= (Py_ssize_t)n && memcmp(p - n, GRAPH[on], n) == 0)
                    graph[on] = p - n - base;
            }
            if (w == v) {
                p++;
                continue;
            }
            c = cents_of(v, w, size);
            if (c >= 0) {
                cells[c]++;
            } else {
                PyObject *text = PyBytes_FromStringAndSize(v, w - v);
                if (text == NULL || PyList_Append(others, text) < 0) {
                    Py_XDECREF(text);
                    goto done;
                }
                Py_DECREF(text);
            }
            if (end - w >= (Py_ssize_t)queue_len && memcmp(w, QUEUE, queue_len) == 0) {
                const char *d = w + queue_len, *e = digits(d, end);
                if (e > d)
                    consider(&queue_peak, d, e);
            }
            p = w;
        }
        /* Token usage. */
        p = base + (lo < hi ? lo : hi);
        while ((p = find(p, end, DECODE, sizeof DECODE - 1, 0)) != NULL) {
            const char *u_end = NULL, *u = usage_at(p + sizeof DECODE - 1, end, &u_end);
            if (u == NULL) {
                p++;
                continue;
            }
            consider(&usage_peak, u, u_end);
            p = u_end;
        }
    }
    usage = peak_text(&usage_peak);
    queue = peak_text(&queue_peak);
    if (usage != NULL && queue != NULL)
        result = Py_BuildValue("(OOOnn)", others, usage, queue, graph[0], graph[1]);
done:
    Py_XDECREF(others);
    Py_XDECREF(usage);
    Py_XDECREF(queue);
    PyBuffer_Release(&block);
    PyBuffer_Release(&counts);
    return result;
}

static PyObject *newlines(PyObject *self, PyObject *arg) {
    Py_buffer block;
    Py_ssize_t n = 0;
    (void)self;
    if (PyObject_GetBuffer(arg, &block, PyBUF_SIMPLE) < 0)
        return NULL;
    {
        const unsigned char *p = block.buf;
        for (Py_ssize_t i = 0; i < block.len; i++)
            n += p[i] == '\n';
    }
    PyBuffer_Release(&block);
    return PyLong_FromSsize_t(n);
}

static PyObject *roomy_heap(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 16 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}

static PyMethodDef methods[] = {
    {"decode_scan", decode_scan, METH_VARARGS,
     "decode_scan(block, lo, hi, counts) -> (uncounted texts, usage, queue, graphs off, graphs on)"},
    {"newlines", newlines, METH_O, "newlines(block) -> how many newline bytes it holds"},
    {"roomy_heap", roomy_heap, METH_NOARGS, "roomy_heap() -> whether the allocator was set (glibc)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
