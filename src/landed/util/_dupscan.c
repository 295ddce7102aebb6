/* A prefilter for duplicate JSON keys, for readers that must refuse them at full speed.
 *
 * landed refuses a JSON object that gives one key twice (readers disagree on which one counts).
 * The exact check (strictjson.loads) builds every object in Python; this scan answers, in one pass
 * over the bytes, whether a text can hold a repeated key at all. It never says "no" wrongly: it
 * says "maybe" for a key written with an escape (two spellings can name one key), for nesting or
 * key counts past its fixed tables, and for text it cannot follow. The caller reads every "maybe"
 * the exact way. It assumes nothing about validity: on broken JSON it answers "maybe" or "no",
 * and the JSON decoder, which runs too, refuses the line. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define MAX_DEPTH 64
#define MAX_KEYS 512 /* keys open at once, over all enclosing objects; past it, "maybe" */

typedef struct {
    const char *at;
    Py_ssize_t len;
} span;

static int may_repeat(const char *s, Py_ssize_t n)
{
    span keys[MAX_KEYS];
    int first_key[MAX_DEPTH];
    char in_object[MAX_DEPTH];
    int depth = 0, nkeys = 0, want_key = 0;
    const char *p = s, *end = s + n;

    while (p < end) {
        char c = *p;
        if (c == '"') {
            const char *start = p + 1;
            /* memchr is vectorised: receipts are mostly long strings (digests, signatures) */
            const char *q = memchr(start, '"', (size_t)(end - start));
            if (q == NULL)
                return 1;
            const char *slash = memchr(start, '\\', (size_t)(q - start));
            if (slash != NULL) {
                if (want_key)
                    return 1;
                const char *r = slash;
                while (r < end && *r != '"')
                    r += (*r == '\\') ? 2 : 1;
                if (r >= end)
                    return 1;
                p = r + 1;
                continue;
            }
            if (want_key) {
                Py_ssize_t len = q - start;
                for (int k = first_key[depth - 1]; k < nkeys; k++)
                    if (keys[k].len == len && memcmp(keys[k].at, start, (size_t)len) == 0)
                        return 1;
                if (nkeys >= MAX_KEYS)
                    return 1;
                keys[nkeys].at = start;
                keys[nkeys].len = len;
                nkeys++;
                want_key = 0;
            }
            p = q + 1;
            continue;
        }
        switch (c) {
        case '{':
        case '[':
            if (depth >= MAX_DEPTH)
                return 1;
            first_key[depth] = nkeys;
            in_object[depth] = (char)(c == '{');
            depth++;
            want_key = (c == '{');
            break;
        case '}':
        case ']':
            if (depth == 0)
                return 1;
            depth--;
            nkeys = first_key[depth]; /* a closed object's keys no longer count */
            want_key = 0;
            break;
        case ',':
            want_key = depth > 0 && in_object[depth - 1];
            break;
        default:
            break;
        }
        p++;
    }
    return 0;
}

static PyObject *may_repeat_keys(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    int maybe = may_repeat((const char *)view.buf, view.len);
    PyBuffer_Release(&view);
    return PyBool_FromLong(maybe);
}

static PyMethodDef methods[] = {
    {"may_repeat_keys", may_repeat_keys, METH_O,
     "may_repeat_keys(data: bytes) -> bool\n\nFalse only when no JSON object in data gives a key "
     "twice; True when one may (read it with strictjson.loads to know)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "landed.util._dupscan",
    "A one-pass prefilter for duplicate JSON keys.", -1, methods,
};

PyMODINIT_FUNC PyInit__dupscan(void)
{
    return PyModule_Create(&module);
}
