/* Rows of columns written as JSON text: the compiled path of traceview/json_rows.
 *
 * A row is a fixed sequence of literal pieces (the keys, braces and constants, made once by the
 * Python side) with one value from each column between them: piece 0, column 0, piece 1, ...,
 * the last piece. Rows are joined by a separator. Columns are of four kinds, each a value per row
 * and an optional null flag per row (1: write null):
 *   INT    int64, written in decimal;
 *   MILLI  int64 k, written as the decimal k / 1000 with its trailing zeros dropped and at least
 *          one digit after the point (1500 -> 1.5, 2000 -> 2.0): how polars writes the float
 *          nearest k / 1000 while |k| < 10^15 (checked on the Python side);
 *   STRING UTF-8 text (offsets into one buffer), written as a JSON string, escaped as polars'
 *          NDJSON writer escapes;
 *   RAW    text written as it is (a value the Python side formatted);
 *   DICT   int64 entry numbers into a table of texts written as they are (the JSON of a column's
 *          distinct strings, made once).
 * No Python object is made per row: the text goes straight into the bytes object returned.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { K_INT = 0, K_MILLI = 1, K_STRING = 2, K_RAW = 3, K_DICT = 4, N_KINDS };

typedef struct {
    int kind;
    Py_buffer values; /* int64: the values, or for STRING and RAW the n + 1 offsets */
    Py_buffer nulls;  /* one byte a row, or buf == NULL */
    Py_buffer table;  /* DICT: the n_entries + 1 offsets of its entries in text */
    Py_ssize_t n_entries;
    const char *text; /* STRING, RAW and DICT: the bytes the offsets point into */
    Py_ssize_t text_len;
} Column;

/* The text is written into one scratch buffer kept from call to call, then copied into a bytes
 * object of its exact size: a buffer made for each call and cut to size would be fresh pages each
 * time (blocks this large are mapped anew by the C allocator), each page a fault. The GIL is held
 * throughout, so one buffer serves every call. */
static char *scratch;
static size_t scratch_cap;

typedef struct {
    char *at, *end;
} Out;

static const char DIGIT_PAIRS[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                  "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                  "8081828384858687888990919293949596979899";

/* Room for `need` more bytes; -1 (an exception set) when memory runs out. */
static int reserve(Out *o, size_t need) {
    if ((size_t)(o->end - o->at) >= need) return 0;
    size_t used = (size_t)(o->at - scratch);
    size_t want = scratch_cap * 2 > used + need ? scratch_cap * 2 : used + need + (1 << 20);
    char *grown = PyMem_RawRealloc(scratch, want);
    if (!grown) {
        PyErr_NoMemory();
        return -1;
    }
    scratch = grown;
    scratch_cap = want;
    o->at = scratch + used;
    o->end = scratch + want;
    return 0;
}

/* `v` in decimal (at most 20 bytes). */
static char *put_uint(char *p, uint64_t v) {
    char tmp[20];
    char *t = tmp + sizeof tmp;
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        t -= 2;
        memcpy(t, DIGIT_PAIRS + 2 * r, 2);
    }
    if (v >= 10) {
        t -= 2;
        memcpy(t, DIGIT_PAIRS + 2 * v, 2);
    } else {
        *--t = (char)('0' + v);
    }
    size_t n = (size_t)(tmp + sizeof tmp - t);
    memcpy(p, t, n);
    return p + n;
}

static char *put_int(char *p, int64_t v) {
    if (v < 0) {
        *p++ = '-';
        return put_uint(p, (uint64_t)0 - (uint64_t)v); /* INT64_MIN too */
    }
    return put_uint(p, (uint64_t)v);
}

/* k / 1000: the whole part, the point, then the thousandths without trailing zeros (one 0 for
 * a whole number). At most 25 bytes. */
static char *put_milli(char *p, int64_t k) {
    uint64_t m = k < 0 ? (uint64_t)0 - (uint64_t)k : (uint64_t)k;
    if (k < 0) *p++ = '-';
    p = put_uint(p, m / 1000);
    *p++ = '.';
    unsigned frac = (unsigned)(m % 1000);
    if (frac == 0) {
        *p++ = '0';
        return p;
    }
    *p++ = (char)('0' + frac / 100);
    frac %= 100;
    if (frac == 0) return p;
    *p++ = (char)('0' + frac / 10);
    frac %= 10;
    if (frac == 0) return p;
    *p++ = (char)('0' + frac);
    return p;
}

/* A JSON string of s[:n]: quote and backslash escaped, \b \t \n \f \r as such, other control
 * bytes as \u00xx; everything else (UTF-8 included) as it is. At most 2 + 6n bytes. */
static char *put_string(char *p, const unsigned char *s, size_t n) {
    static const char HEX[] = "0123456789abcdef";
    *p++ = '"';
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && s[j] >= 0x20 && s[j] != '"' && s[j] != '\\') j++;
        memcpy(p, s + i, j - i);
        p += j - i;
        if (j == n) break;
        unsigned char c = s[j];
        *p++ = '\\';
        switch (c) {
        case '"': *p++ = '"'; break;
        case '\\': *p++ = '\\'; break;
        case '\b': *p++ = 'b'; break;
        case '\t': *p++ = 't'; break;
        case '\n': *p++ = 'n'; break;
        case '\f': *p++ = 'f'; break;
        case '\r': *p++ = 'r'; break;
        default:
            memcpy(p, "u00", 3);
            p[3] = HEX[c >> 4];
            p[4] = HEX[c & 15];
            p += 5;
        }
        i = j + 1;
    }
    *p++ = '"';
    return p;
}

static void release(Column *cols, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        if (cols[i].values.buf) PyBuffer_Release(&cols[i].values);
        if (cols[i].nulls.buf) PyBuffer_Release(&cols[i].nulls);
        if (cols[i].table.buf) PyBuffer_Release(&cols[i].table);
    }
}

/* Whether offsets[0..n] run forward within a text of text_len bytes. */
static int offsets_within(const int64_t *offsets, Py_ssize_t n, Py_ssize_t text_len) {
    if (offsets[0] < 0) return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (offsets[i + 1] < offsets[i]) return 0;
    return offsets[n] <= text_len;
}

/* One column from (kind, values, nulls or None, text or None, table or None), checked against
 * rows [0, stop). */
static int read_column(PyObject *spec, Column *c, Py_ssize_t stop) {
    PyObject *values, *nulls, *text, *table;
    if (!PyTuple_Check(spec) || !PyArg_ParseTuple(spec, "iOOOO", &c->kind, &values, &nulls, &text, &table)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a column is (kind, values, nulls, text, table)");
        return -1;
    }
    if (c->kind < 0 || c->kind >= N_KINDS) {
        PyErr_Format(PyExc_ValueError, "unknown column kind %d", c->kind);
        return -1;
    }
    if (PyObject_GetBuffer(values, &c->values, PyBUF_C_CONTIGUOUS) < 0) return -1;
    int by_row = c->kind == K_STRING || c->kind == K_RAW;
    Py_ssize_t want = by_row ? stop + 1 : stop;
    if (c->values.itemsize != 8 || c->values.len < want * 8) {
        PyErr_SetString(PyExc_ValueError, "a column's values are not int64 for every row");
        return -1;
    }
    if (nulls != Py_None) {
        if (PyObject_GetBuffer(nulls, &c->nulls, PyBUF_C_CONTIGUOUS) < 0) return -1;
        if (c->nulls.itemsize != 1 || c->nulls.len < stop) {
            PyErr_SetString(PyExc_ValueError, "a column's null flags are not one byte for every row");
            return -1;
        }
    }
    if (by_row || c->kind == K_DICT) {
        if (PyUnicode_Check(text)) {
            c->text = PyUnicode_AsUTF8AndSize(text, &c->text_len);
            if (!c->text) return -1;
        } else if (PyBytes_Check(text)) {
            c->text = PyBytes_AS_STRING(text);
            c->text_len = PyBytes_GET_SIZE(text);
        } else {
            PyErr_SetString(PyExc_TypeError, "a text column's text is str or bytes");
            return -1;
        }
    }
    if (c->kind == K_DICT) {
        if (table == Py_None || PyObject_GetBuffer(table, &c->table, PyBUF_C_CONTIGUOUS) < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a DICT column has a table");
            return -1;
        }
        c->n_entries = c->table.len / 8 - 1;
        if (c->table.itemsize != 8 || c->n_entries < 0 ||
            !offsets_within(c->table.buf, c->n_entries, c->text_len)) {
            PyErr_SetString(PyExc_ValueError, "a DICT column's table leaves its text");
            return -1;
        }
    }
    return 0;
}

static PyObject *rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *pieces, *specs;
    Py_ssize_t start, stop;
    const char *sep;
    Py_ssize_t sep_len;
    if (!PyArg_ParseTuple(args, "O!O!nny#", &PyTuple_Type, &pieces, &PyTuple_Type, &specs, &start,
                          &stop, &sep, &sep_len))
        return NULL;
    Py_ssize_t n_cols = PyTuple_GET_SIZE(specs);
    if (PyTuple_GET_SIZE(pieces) != n_cols + 1) {
        PyErr_SetString(PyExc_ValueError, "there is one piece more than columns");
        return NULL;
    }
    if (start < 0 || stop < start) {
        PyErr_SetString(PyExc_ValueError, "rows run from start to stop, 0 <= start <= stop");
        return NULL;
    }
    size_t fixed = (size_t)sep_len;
    for (Py_ssize_t i = 0; i <= n_cols; i++) {
        if (!PyBytes_Check(PyTuple_GET_ITEM(pieces, i))) {
            PyErr_SetString(PyExc_TypeError, "pieces are bytes");
            return NULL;
        }
        fixed += (size_t)PyBytes_GET_SIZE(PyTuple_GET_ITEM(pieces, i));
    }
    Column *cols = PyMem_Calloc((size_t)n_cols + 1, sizeof(Column));
    if (!cols) return PyErr_NoMemory();
    Out o;
    for (Py_ssize_t i = 0; i < n_cols; i++) {
        if (read_column(PyTuple_GET_ITEM(specs, i), &cols[i], stop) < 0) goto fail;
        fixed += 25; /* the most a number takes */
    }
    if (!scratch) {
        scratch = PyMem_RawMalloc(1 << 20);
        if (!scratch) {
            PyErr_NoMemory();
            goto fail;
        }
        scratch_cap = 1 << 20;
    }
    o.at = scratch;
    o.end = scratch + scratch_cap;
    for (Py_ssize_t r = start; r < stop; r++) {
        size_t need = fixed;
        for (Py_ssize_t i = 0; i < n_cols; i++) {
            Column *c = &cols[i];
            const int64_t *v = c->values.buf;
            if (c->nulls.buf && ((const uint8_t *)c->nulls.buf)[r]) continue; /* null: 4 bytes, in fixed */
            if (c->kind == K_DICT) {
                if (v[r] < 0 || v[r] >= c->n_entries) {
                    PyErr_SetString(PyExc_ValueError, "a DICT column's entry is not in its table");
                    goto fail;
                }
                const int64_t *t = c->table.buf;
                need += (size_t)(t[v[r] + 1] - t[v[r]]);
            } else if (c->kind == K_STRING || c->kind == K_RAW) {
                if (v[r] < 0 || v[r + 1] < v[r] || v[r + 1] > c->text_len) {
                    PyErr_SetString(PyExc_ValueError, "a text column's offsets leave its text");
                    goto fail;
                }
                need += 2 + 6 * (size_t)(v[r + 1] - v[r]);
            }
        }
        if (reserve(&o, need) < 0) goto fail;
        char *p = o.at;
        if (r > start) {
            memcpy(p, sep, (size_t)sep_len);
            p += sep_len;
        }
        for (Py_ssize_t i = 0; i <= n_cols; i++) {
            PyObject *piece = PyTuple_GET_ITEM(pieces, i);
            memcpy(p, PyBytes_AS_STRING(piece), (size_t)PyBytes_GET_SIZE(piece));
            p += PyBytes_GET_SIZE(piece);
            if (i == n_cols) break;
            Column *c = &cols[i];
            if (c->nulls.buf && ((const uint8_t *)c->nulls.buf)[r]) {
                memcpy(p, "null", 4);
                p += 4;
                continue;
            }
            const int64_t *v = c->values.buf;
            switch (c->kind) {
            case K_INT: p = put_int(p, v[r]); break;
            case K_MILLI: p = put_milli(p, v[r]); break;
            case K_STRING:
                p = put_string(p, (const unsigned char *)c->text + v[r], (size_t)(v[r + 1] - v[r]));
                break;
            case K_DICT: {
                const int64_t *t = c->table.buf;
                memcpy(p, c->text + t[v[r]], (size_t)(t[v[r] + 1] - t[v[r]]));
                p += t[v[r] + 1] - t[v[r]];
                break;
            }
            default:
                memcpy(p, c->text + v[r], (size_t)(v[r + 1] - v[r]));
                p += v[r + 1] - v[r];
            }
        }
        o.at = p;
    }
    release(cols, n_cols);
    PyMem_Free(cols);
    return PyBytes_FromStringAndSize(scratch, o.at - scratch);
fail:
    release(cols, n_cols);
    PyMem_Free(cols);
    return NULL;
}

static PyMethodDef methods[] = {
    {"rows", rows, METH_VARARGS,
     "rows(pieces, columns, start, stop, separator) -> bytes: rows [start, stop) as JSON text, "
     "each piece 0, column 0, piece 1, ..., the last piece; joined by separator."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_rows",
    .m_doc = "Rows of columns written as JSON text (traceview/json_rows).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__rows(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddIntConstant(m, "INT", K_INT) < 0 || PyModule_AddIntConstant(m, "MILLI", K_MILLI) < 0 ||
        PyModule_AddIntConstant(m, "STRING", K_STRING) < 0 || PyModule_AddIntConstant(m, "RAW", K_RAW) < 0 ||
        PyModule_AddIntConstant(m, "DICT", K_DICT) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
