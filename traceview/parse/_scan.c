/* The fast path of the trace parser: the events of a `traceEvents` array straight into columns.
 *
 * One pass over the bytes, no Python object per event. For each complete ("X") event it writes
 * the timestamp and duration as integer nanoseconds, the name and category as ids into tables of
 * distinct strings, and the ids the model reads (pid, tid, and args' correlation, device, stream);
 * for metadata ("M") events and for each complete event's `args` it records where their bytes
 * lie, so the Python side decodes those few with the same msgspec structs as the pure-Python path.
 * The args a collective's events carry (sizes, groups, shapes), and every kernel's launch shape
 * (grid, block), are kept as ids into a table of distinct value texts per arg: the Python side
 * decodes each distinct text once, not each event.
 *
 * It handles the plain case only. Anything the pure-Python path reads in a way of its own - a
 * field of an unexpected type, a number it would round, bytes that are not UTF-8, JSON that does
 * not parse, deep nesting - makes the whole batch "odd", and the caller decodes that batch with the
 * pure-Python path instead; so both paths give identical results (tests/parse/test_fast_path.py).
 * An id written as a string or beyond int64 is left to the Python readers one value at a time.
 *
 * The GIL is released while scanning, so two threads can scan two parts of one trace at once.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#define GUARD_FAULTS 1
#endif
/* SSE2 is part of every x86-64; elsewhere (or built with -DTRACEVIEW_NO_SIMD) strings are
 * read eight bytes at a time by a table instead. */
#if defined(__SSE2__) && !defined(TRACEVIEW_NO_SIMD)
#define USE_SSE2 1
#include <emmintrin.h>
#endif

#define NONE INT64_MIN /* a missing value in every column */
#define MAX_DEPTH 64
/* 2^52 ns: FLOAT_EXACT_US of parse/events.py in nanoseconds. From a first timestamp this large,
 * with fractions, the pure-Python path reads a trace's timestamps as decimals, not floats. */
#define FLOAT_EXACT_NS 4503599627370496LL
#define FLOAT_INT_US 9007199254740992LL /* 2^53: integers above it blur as float64 */

enum { OK = 0, END_OF_BUFFER = 1, ODD = 2, CLOSED = 3 };
enum { ST_NEED_MORE = 0, ST_BATCH = 1, ST_ODD = 2, ST_FAULT = 3 };

/* The columns, in their order, written once: the enum below and the names the module exports as
 * COLUMNS (the Python side takes the order from there, parse/fast.py). */
#define FOR_EACH_COLUMN(X)                                                                             \
    X(C_TS, "ts_ns")                                                                                \
    X(C_DUR, "dur_ns")                                                                              \
    X(C_NAME, "name")                                                                               \
    X(C_CAT, "cat")                                                                                 \
    X(C_PID, "pid")                                                                                 \
    X(C_TID, "tid")                                                                                 \
    X(C_CORR, "correlation")                                                                        \
    X(C_DEVICE, "device")                                                                           \
    X(C_STREAM, "stream")                                                                           \
    X(C_ARGS_AT, "args_at")                                                                         \
    X(C_ARGS_END, "args_end")
#define COLUMN_ENUM(id, name) id,
#define COLUMN_NAME(id, name) name,
enum { FOR_EACH_COLUMN(COLUMN_ENUM) N_COLUMNS };
static const char *const COLUMN_NAMES[N_COLUMNS] = {FOR_EACH_COLUMN(COLUMN_NAME)};
/* Kinds of declared args (traceview/parse/args.py's readings, as the decoder types them). */
enum { K_CORR = 0, K_DEVICE = 1, K_STREAM = 2, K_LOOSE = 3, K_RAW = 4, K_TEXT_OR_NULL = 5 };

typedef struct {
    int64_t *data;
    Py_ssize_t len, cap;
} Vec;

static int vec_push(Vec *v, int64_t x) {
    if (v->len == v->cap) {
        Py_ssize_t cap = v->cap ? v->cap * 2 : 4096;
        int64_t *d = PyMem_RawRealloc(v->data, (size_t)cap * sizeof(int64_t));
        if (!d) return -1;
        v->data = d;
        v->cap = cap;
    }
    v->data[v->len++] = x;
    return 0;
}

/* Distinct strings -> dense ids (open addressing over an arena of their bytes). */
typedef struct {
    char *arena;
    size_t arena_len, arena_cap;
    size_t *offset; /* by id */
    uint32_t *length;
    uint32_t count, cap_ids, reported;
    int32_t *slots; /* id or -1 */
    uint64_t *hashes;
    uint32_t n_slots;
} Intern;

static uint64_t hash_bytes(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ULL ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) { /* a word at a time */
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 32;
    }
    for (; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
    return h ^ (h >> 29);
}

static int intern_grow(Intern *t) {
    uint32_t n = t->n_slots ? t->n_slots * 2 : 1024;
    int32_t *slots = PyMem_RawMalloc(n * sizeof(int32_t));
    uint64_t *hashes = PyMem_RawMalloc(n * sizeof(uint64_t));
    if (!slots || !hashes) {
        PyMem_RawFree(slots);
        PyMem_RawFree(hashes);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) slots[i] = -1;
    for (uint32_t i = 0; i < t->n_slots; i++) {
        if (t->slots[i] < 0) continue;
        uint32_t j = (uint32_t)t->hashes[i] & (n - 1);
        while (slots[j] >= 0) j = (j + 1) & (n - 1);
        slots[j] = t->slots[i];
        hashes[j] = t->hashes[i];
    }
    PyMem_RawFree(t->slots);
    PyMem_RawFree(t->hashes);
    t->slots = slots;
    t->hashes = hashes;
    t->n_slots = n;
    return 0;
}

static inline int valid_utf8(const unsigned char *p, size_t n);

/* The id of `p[:n]`, added if new; -1 when out of memory, -2 when new and not UTF-8 (a string
 * in the table was checked when it was added). */
static int64_t intern(Intern *t, const char *p, size_t n) {
    if ((t->count + 1) * 2 > t->n_slots && intern_grow(t) < 0) return -1;
    uint64_t h = hash_bytes((const unsigned char *)p, n);
    uint32_t j = (uint32_t)h & (t->n_slots - 1);
    while (t->slots[j] >= 0) {
        int32_t id = t->slots[j];
        /* memcmp is not given the arena while it is empty (NULL): the empty string is equal. */
        if (t->hashes[j] == h && t->length[id] == n &&
            (n == 0 || memcmp(t->arena + t->offset[id], p, n) == 0))
            return id;
        j = (j + 1) & (t->n_slots - 1);
    }
    if (!valid_utf8((const unsigned char *)p, n)) return -2;
    if (t->count == t->cap_ids) {
        uint32_t cap = t->cap_ids ? t->cap_ids * 2 : 1024;
        size_t *off = PyMem_RawRealloc(t->offset, cap * sizeof(size_t));
        if (!off) return -1;
        t->offset = off;
        uint32_t *len = PyMem_RawRealloc(t->length, cap * sizeof(uint32_t));
        if (!len) return -1;
        t->length = len;
        t->cap_ids = cap;
    }
    if (t->arena_len + n > t->arena_cap) {
        size_t cap = t->arena_cap ? t->arena_cap : 65536;
        while (cap < t->arena_len + n) cap *= 2;
        char *a = PyMem_RawRealloc(t->arena, cap);
        if (!a) return -1;
        t->arena = a;
        t->arena_cap = cap;
    }
    if (n > 0) memcpy(t->arena + t->arena_len, p, n); /* "" may come before any arena exists */
    uint32_t id = t->count++;
    t->offset[id] = t->arena_len;
    t->length[id] = (uint32_t)n;
    t->arena_len += n;
    t->slots[j] = (int32_t)id;
    t->hashes[j] = h;
    return id;
}

static void intern_free(Intern *t) {
    PyMem_RawFree(t->arena);
    PyMem_RawFree(t->offset);
    PyMem_RawFree(t->length);
    PyMem_RawFree(t->slots);
    PyMem_RawFree(t->hashes);
    memset(t, 0, sizeof(*t));
}

/* The strings added since the last call, as a list of str. */
static PyObject *intern_new(Intern *t) {
    PyObject *out = PyList_New(t->count - t->reported);
    if (!out) return NULL;
    for (uint32_t id = t->reported; id < t->count; id++) {
        PyObject *s = PyUnicode_DecodeUTF8(t->arena + t->offset[id], t->length[id], "strict");
        if (!s) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, id - t->reported, s);
    }
    t->reported = t->count;
    return out;
}

#define MAX_ARG_KEYS 32  /* a bit each in keys_of_length */
#define KEY_LENGTHS 64   /* keys this long or longer share the last slot */
#define MAX_KEPT 16      /* args whose values are kept (a bit each in Event.kept_mask) */
typedef struct {
    PyObject_HEAD
    Intern names, cats;
    Intern kept_values[MAX_KEPT]; /* each kept arg's distinct value texts */
    int n_kept;
    /* By name id: its events' kept args are recorded (1) or not (0); names beyond the flags
     * the caller has given (first seen since) are recorded, and sorted out by the caller. */
    unsigned char *name_keeps;
    Py_ssize_t n_name_keeps;
    uint32_t always_kept; /* the kept slots recorded for every event, whatever its name */
    Vec kept; /* row, kept slot, value id */
    unsigned char known_phase[256];
    int n_arg_keys;
    char *arg_key[MAX_ARG_KEYS];
    size_t arg_key_len[MAX_ARG_KEYS];
    int arg_kind[MAX_ARG_KEYS];
    int arg_slot[MAX_ARG_KEYS]; /* its kept slot, or -1: the value is only checked */
    /* Bit k set where arg_key[k] has this length: most keys of an event's args are not
     * declared, and their length alone rules out every declared key, or all but one. */
    uint32_t keys_of_length[KEY_LENGTHS];
    Vec columns[N_COLUMNS];
    Vec metadata; /* start, end of each metadata event */
    Vec odd_ids;  /* row, column, value start, value end */
    char *scratch; /* an unescaped string */
    size_t scratch_cap;
} Scanner;

/* ------------------------------------------------------------------------------------------ */
/* Reading JSON. Each reader moves *pp past what it read and returns OK, END_OF_BUFFER or ODD. */

typedef struct {
    const unsigned char *base, *end;
} Buf;

static unsigned char is_ws[256]; /* JSON's white space: space, tab, newline, return */

static inline const unsigned char *skip_ws(const unsigned char *p, const unsigned char *end) {
    while (p < end && is_ws[*p]) p++;
    return p;
}

#define HIGH_BITS 0x8080808080808080ULL

/* Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF), as Python decodes it. */
static inline int valid_utf8(const unsigned char *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint64_t w;
        if (i + 8 <= n && (memcpy(&w, p + i, 8), !(w & HIGH_BITS))) { /* eight ASCII bytes */
            i += 8;
            continue;
        }
        unsigned char c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            cp = c & 0x07;
        } else
            return 0;
        if (i + need >= n) return 0; /* cut short */
        for (size_t k = 1; k <= need; k++) {
            if ((p[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += need + 1;
    }
    return 1;
}

typedef struct {
    const unsigned char *start; /* the bytes between the quotes */
    size_t len;
    int escaped; /* holds a backslash */
} Str;

/* A string starting at its opening quote. Control characters and bad escapes are odd (msgspec
 * refuses them), and so is any \u escape of a surrogate (left to msgspec's own checks). */
/* Bytes that end a plain run inside a string: the quote, the backslash, control characters. */
static unsigned char string_stop[256];

static void init_tables(void) {
    is_ws[' '] = is_ws['\t'] = is_ws['\n'] = is_ws['\r'] = 1;
    for (int c = 0; c < 0x20; c++) string_stop[c] = 1;
    string_stop['"'] = string_stop['\\'] = 1;
}

static inline __attribute__((always_inline)) int read_string(const unsigned char **pp, const unsigned char *end, Str *s) {
    const unsigned char *p = *pp + 1, *start = p;
    int escaped = 0;
    for (;;) {
        /* The common run: plain bytes, sixteen (or eight) at a time while the buffer lasts. */
#ifdef USE_SSE2
        const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'),
                      control = _mm_set1_epi8(0x1F);
        while (end - p >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)p);
            __m128i stop = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                _mm_cmpeq_epi8(_mm_max_epu8(v, control), control)); /* bytes up to 0x1F */
            int mask = _mm_movemask_epi8(stop);
            if (mask) {
                p += __builtin_ctz((unsigned)mask);
                goto stopped;
            }
            p += 16;
        }
#else
        while (end - p >= 8 && !(string_stop[p[0]] | string_stop[p[1]] | string_stop[p[2]] |
                                 string_stop[p[3]] | string_stop[p[4]] | string_stop[p[5]] |
                                 string_stop[p[6]] | string_stop[p[7]]))
            p += 8;
#endif
        while (p < end && !string_stop[*p]) p++;
        if (p >= end) return END_OF_BUFFER;
    stopped: /* at a quote, a backslash or a control character */
        if (*p == '"') break;
        if (*p < 0x20) return ODD;
        escaped = 1; /* a backslash */
        if (p + 1 >= end) return END_OF_BUFFER;
        unsigned char e = p[1];
        if (e == 'u') {
            if (p + 6 > end) return END_OF_BUFFER;
            unsigned v = 0;
            for (int k = 2; k < 6; k++) {
                unsigned char h = p[k];
                v <<= 4;
                if (h >= '0' && h <= '9') v |= h - '0';
                else if (h >= 'a' && h <= 'f') v |= h - 'a' + 10;
                else if (h >= 'A' && h <= 'F') v |= h - 'A' + 10;
                else return ODD;
            }
            if (v >= 0xD800 && v <= 0xDFFF) return ODD;
            p += 6;
        } else if (e && strchr("\"\\/bfnrt", e)) {
            p += 2;
        } else {
            return ODD;
        }
    }
    s->start = start;
    s->len = (size_t)(p - start);
    s->escaped = escaped;
    *pp = p + 1;
    return OK;
}

/* Whether a string holds bytes past ASCII (then the decoder checks it as UTF-8). */
static inline int has_high(const Str *s) {
    for (size_t i = 0; i < s->len; i++)
        if (s->start[i] >= 0x80) return 1;
    return 0;
}

/* The decoded bytes of an escaped string, into the scanner's scratch buffer. */
static int unescape(Scanner *sc, const Str *s, const char **out, size_t *out_len) {
    if (sc->scratch_cap < s->len) {
        char *b = PyMem_RawRealloc(sc->scratch, s->len);
        if (!b) return -1;
        sc->scratch = b;
        sc->scratch_cap = s->len;
    }
    const unsigned char *p = s->start, *end = s->start + s->len;
    char *o = sc->scratch;
    while (p < end) {
        if (*p != '\\') {
            *o++ = (char)*p++;
            continue;
        }
        unsigned char e = p[1];
        if (e == 'u') {
            unsigned v = 0;
            for (int k = 2; k < 6; k++) {
                unsigned char h = p[k];
                v = (v << 4) | (unsigned)(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
            }
            if (v < 0x80) *o++ = (char)v;
            else if (v < 0x800) {
                *o++ = (char)(0xC0 | (v >> 6));
                *o++ = (char)(0x80 | (v & 0x3F));
            } else {
                *o++ = (char)(0xE0 | (v >> 12));
                *o++ = (char)(0x80 | ((v >> 6) & 0x3F));
                *o++ = (char)(0x80 | (v & 0x3F));
            }
            p += 6;
            continue;
        }
        switch (e) {
            case 'b': *o++ = '\b'; break;
            case 'f': *o++ = '\f'; break;
            case 'n': *o++ = '\n'; break;
            case 'r': *o++ = '\r'; break;
            case 't': *o++ = '\t'; break;
            default: *o++ = (char)e; break; /* " \ / */
        }
        p += 2;
    }
    *out = sc->scratch;
    *out_len = (size_t)(o - sc->scratch);
    return 0;
}

typedef struct {
    int integer;            /* no fraction, no exponent */
    int plain;              /* no exponent, integer part below 2^53: `ns` holds it */
    int rounded;            /* plain with more than 3 decimals, below FLOAT_EXACT_NS: `ns` is the
                               float64's reading, which only the float path shares */
    int fraction;           /* a nonzero fraction */
    int64_t ns;             /* value * 1000, when plain */
    int fits;               /* an integer within int64 (as `value`) */
    int64_t value;
} Num;

static inline int is_end_of_number(unsigned char c) {
    return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* A JSON number, strictly by the grammar; a number must be followed by something in the buffer
 * (its last digit may not be the last byte: more digits could follow). */
static inline __attribute__((always_inline)) int read_number(const unsigned char **pp, const unsigned char *end, Num *n) {
    const unsigned char *p = *pp, *start = *pp;
    int neg = 0;
    if (p < end && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= end) return END_OF_BUFFER;
    if (*p < '0' || *p > '9') return ODD;
    uint64_t whole = 0;
    int overflow = 0;
    if (*p == '0') {
        p++;
        if (p < end && *p >= '0' && *p <= '9') return ODD; /* a leading zero */
    } else {
        while (p < end && *p >= '0' && *p <= '9') {
            if (whole > (UINT64_MAX - 9) / 10) overflow = 1;
            else whole = whole * 10 + (uint64_t)(*p - '0');
            p++;
        }
    }
    int frac_digits = 0;
    uint64_t frac = 0;
    int fraction_nonzero = 0;
    if (p < end && *p == '.') {
        p++;
        if (p >= end) return END_OF_BUFFER;
        if (*p < '0' || *p > '9') return ODD;
        while (p < end && *p >= '0' && *p <= '9') {
            if (frac_digits < 3) frac = frac * 10 + (uint64_t)(*p - '0');
            if (*p != '0') fraction_nonzero = 1;
            frac_digits++;
            p++;
        }
    }
    int exponent = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        exponent = 1;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end) return END_OF_BUFFER;
        if (*p < '0' || *p > '9') return ODD;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p >= end) return END_OF_BUFFER;
    if (!is_end_of_number(*p)) return ODD;
    n->integer = frac_digits == 0 && !exponent;
    n->fraction = fraction_nonzero;
    n->plain = !exponent && !overflow && whole < (uint64_t)FLOAT_INT_US;
    n->rounded = 0;
    if (n->plain) {
        for (int k = frac_digits; k < 3; k++) frac *= 10;
        int64_t ns = (int64_t)whole * 1000 + (int64_t)frac; /* more decimals: cut, as Decimal */
        n->ns = neg ? -ns : ns;
        if (frac_digits > 3 && ns < FLOAT_EXACT_NS) {
            if (p - start >= 64) {
                n->plain = 0; /* digits beyond any float64's: left to Python */
            } else {
                /* As the pure-Python path reads it (parse/columns.py nanoseconds): the float64
                 * nearest the text (strtod and msgspec both round correctly), its whole
                 * microseconds and its fraction apart, the fraction's ns rounded half to even. */
                char text[64];
                memcpy(text, start, (size_t)(p - start));
                text[p - start] = 0;
                double us = strtod(text, NULL), w = floor(us);
                n->ns = (int64_t)w * 1000 + (int64_t)nearbyint((us - w) * 1000.0);
                n->rounded = 1;
            }
        }
    }
    n->fits = n->integer && !overflow && whole <= (uint64_t)INT64_MAX;
    if (n->fits) n->value = neg ? -(int64_t)whole : (int64_t)whole;
    *pp = p;
    return OK;
}

static int skip_value(const unsigned char **pp, const unsigned char *end, int depth);

/* An object member's `"key":` and the white space after it: *pp is left at the value. */
static inline int read_key(const unsigned char **pp, const unsigned char *end, Str *key) {
    const unsigned char *p = *pp;
    int r;
    if (*p != '"') return ODD;
    if ((r = read_string(&p, end, key)) != OK) return r;
    p = skip_ws(p, end);
    if (p >= end) return END_OF_BUFFER;
    if (*p != ':') return ODD;
    p = skip_ws(p + 1, end);
    if (p >= end) return END_OF_BUFFER;
    *pp = p;
    return OK;
}

/* After a member or element: CLOSED with *pp past `close`, or OK with *pp at the next one. */
static inline int after_member(const unsigned char **pp, const unsigned char *end,
                               unsigned char close) {
    const unsigned char *p = skip_ws(*pp, end);
    if (p >= end) return END_OF_BUFFER;
    if (*p == close) {
        *pp = p + 1;
        return CLOSED;
    }
    if (*p != ',') return ODD;
    p = skip_ws(p + 1, end);
    if (p >= end) return END_OF_BUFFER;
    *pp = p;
    return OK;
}

static int expect_literal(const unsigned char **pp, const unsigned char *end, const char *word) {
    size_t n = strlen(word);
    const unsigned char *p = *pp;
    size_t have = (size_t)(end - p);
    if (memcmp(p, word, have < n ? have : n) != 0) return ODD;
    if (have <= n) return END_OF_BUFFER; /* something must follow it */
    if (!is_end_of_number(p[n])) return ODD;
    *pp = p + n;
    return OK;
}

/* An object or array after its opening bracket, to its closing one. */
static int skip_container(const unsigned char **pp, const unsigned char *end, int depth, int object) {
    if (depth > MAX_DEPTH) return ODD;
    const unsigned char *p = skip_ws(*pp + 1, end);
    unsigned char close = object ? '}' : ']';
    if (p >= end) return END_OF_BUFFER;
    if (*p == close) {
        *pp = p + 1;
        return OK;
    }
    for (;;) {
        int r;
        Str key;
        if (object && (r = read_key(&p, end, &key)) != OK) return r;
        if ((r = skip_value(&p, end, depth + 1)) != OK) return r;
        if ((r = after_member(&p, end, close)) == CLOSED) {
            *pp = p;
            return OK;
        }
        if (r != OK) return r;
    }
}

static int skip_value(const unsigned char **pp, const unsigned char *end, int depth) {
    const unsigned char *p = *pp;
    switch (*p) {
        case '"': {
            Str s;
            return read_string(pp, end, &s);
        }
        case '{': return skip_container(pp, end, depth, 1);
        case '[': return skip_container(pp, end, depth, 0);
        case 't': return expect_literal(pp, end, "true");
        case 'f': return expect_literal(pp, end, "false");
        case 'n': return expect_literal(pp, end, "null");
        default: {
            Num n;
            return read_number(pp, end, &n);
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* One event. */

typedef struct {
    int ph; /* the phase's one character; 0 missing, -1 not a one-character string */
    int odd_for_complete; /* a field a complete event reads has a type the fast path leaves */
    Str name, cat;
    int has_name, has_cat;
    int64_t ts, dur;
    int ts_fraction, ts_big_fraction, dur_big_fraction, rounded;
    int64_t ids[5]; /* pid, tid, correlation, device, stream */
    const unsigned char *id_at[5], *id_end[5]; /* a value left to Python */
    const unsigned char *args_at, *args_end; /* NULL when absent or null */
    uint32_t kept_mask; /* the kept slots this event's args hold */
    const unsigned char *kept_at[MAX_KEPT], *kept_end[MAX_KEPT]; /* each one's value text */
} Event;

static const int ID_COLUMN[5] = {C_PID, C_TID, C_CORR, C_DEVICE, C_STREAM};

/* An id (int | str | null in the decoder): an int within int64 is read here; a string or a
 * larger int is left to Python; anything else is odd. */
static int read_id(const unsigned char **pp, const unsigned char *end, Event *ev, int slot) {
    const unsigned char *p = *pp;
    int r;
    ev->id_at[slot] = NULL;
    if (*p == '"') {
        Str s;
        if ((r = read_string(pp, end, &s)) != OK) return r;
        if (has_high(&s)) ev->odd_for_complete = 1; /* to be checked as UTF-8 by the decoder */
        ev->ids[slot] = NONE;
        ev->id_at[slot] = p;
        ev->id_end[slot] = *pp;
        return OK;
    }
    if (*p == 'n') {
        ev->ids[slot] = NONE;
        return expect_literal(pp, end, "null");
    }
    if (*p == '-' || (*p >= '0' && *p <= '9')) {
        Num n;
        if ((r = read_number(pp, end, &n)) != OK) return r;
        if (!n.integer) {
            ev->odd_for_complete = 1; /* a float where an int is expected */
        } else if (n.fits && n.value != NONE) {
            ev->ids[slot] = n.value;
        } else {
            ev->ids[slot] = NONE;
            ev->id_at[slot] = p;
            ev->id_end[slot] = *pp;
        }
        return OK;
    }
    ev->odd_for_complete = 1;
    return skip_value(pp, end, 2);
}

/* A time (int | float | str | null): plain numbers only. */
static int read_time(const unsigned char **pp, const unsigned char *end, Event *ev, int is_ts) {
    const unsigned char *p = *pp;
    int r;
    int64_t *out = is_ts ? &ev->ts : &ev->dur;
    *out = NONE;
    if (*p == 'n') return expect_literal(pp, end, "null");
    if (*p == '-' || (*p >= '0' && *p <= '9')) {
        Num n;
        if ((r = read_number(pp, end, &n)) != OK) return r;
        if (!n.plain) {
            ev->odd_for_complete = 1;
            return OK;
        }
        *out = n.ns;
        ev->rounded |= n.rounded;
        int big = n.fraction && (n.ns >= FLOAT_EXACT_NS || n.ns <= -FLOAT_EXACT_NS);
        if (is_ts) {
            ev->ts_fraction = n.fraction;
            ev->ts_big_fraction = big;
        } else {
            ev->dur_big_fraction = big;
        }
        return OK;
    }
    ev->odd_for_complete = 1; /* a string or another type */
    return skip_value(pp, end, 2);
}

/* A value the decoder types int | float | str | null. */
static int check_loose(const unsigned char **pp, const unsigned char *end, Event *ev) {
    const unsigned char *p = *pp;
    int r;
    if (*p == '"') {
        Str s;
        if ((r = read_string(pp, end, &s)) != OK) return r;
        if (!valid_utf8(s.start, s.len)) ev->odd_for_complete = 1;
        return OK;
    }
    if (*p == 'n') return expect_literal(pp, end, "null");
    if (*p == '-' || (*p >= '0' && *p <= '9')) {
        Num n;
        if ((r = read_number(pp, end, &n)) != OK) return r;
        if (!n.plain && !n.integer) ev->odd_for_complete = 1; /* floats out of range and such */
        return OK;
    }
    ev->odd_for_complete = 1;
    return skip_value(pp, end, 2);
}

static inline size_t length_slot(size_t len) { return len < KEY_LENGTHS ? len : KEY_LENGTHS - 1; }

/* Whether a key is `word` (n bytes): the first byte compared before memcmp is called. */
static inline int key_is(const Str *k, const char *word, size_t n) {
    return k->len == n && (n == 0 || k->start[0] == (unsigned char)word[0]) &&
           memcmp(k->start, word, n) == 0;
}

static int read_args(Scanner *sc, const unsigned char **pp, const unsigned char *end, Event *ev) {
    const unsigned char *p = *pp;
    int r;
    if (*p == 'n') return expect_literal(pp, end, "null");
    if (*p != '{') {
        ev->odd_for_complete = 1;
        return skip_value(pp, end, 1);
    }
    const unsigned char *start = p;
    ev->kept_mask = 0; /* a second "args" replaces the first, as in the decoder */
    p = skip_ws(p + 1, end);
    if (p >= end) return END_OF_BUFFER;
    if (*p == '}') {
        p++; /* {} */
    } else {
        for (;;) {
            Str key;
            if ((r = read_key(&p, end, &key)) != OK) return r;
            int kind = -1, slot = -1;
            if (key.escaped) ev->odd_for_complete = 1; /* a key spelt with escapes */
            uint32_t candidates = key.escaped ? 0 : sc->keys_of_length[length_slot(key.len)];
            for (; candidates; candidates &= candidates - 1) {
                int k = __builtin_ctz(candidates);
                if (key_is(&key, sc->arg_key[k], sc->arg_key_len[k])) {
                    kind = sc->arg_kind[k];
                    slot = sc->arg_slot[k];
                    break;
                }
            }
            const unsigned char *value = p;
            switch (kind) {
                case K_CORR:
                case K_DEVICE:
                case K_STREAM: r = read_id(&p, end, ev, 2 + kind); break;
                case K_LOOSE: r = check_loose(&p, end, ev); break;
                case K_TEXT_OR_NULL:
                    if (*p == '"') {
                        Str s;
                        r = read_string(&p, end, &s);
                        if (r == OK && !valid_utf8(s.start, s.len)) ev->odd_for_complete = 1;
                    } else if (*p == 'n') {
                        r = expect_literal(&p, end, "null");
                    } else {
                        ev->odd_for_complete = 1;
                        r = skip_value(&p, end, 2);
                    }
                    break;
                default: r = skip_value(&p, end, 2); break;
            }
            if (r != OK) return r;
            if (slot >= 0) { /* a key written twice: the last one counts, as in the decoder */
                ev->kept_mask |= 1u << slot;
                ev->kept_at[slot] = value;
                ev->kept_end[slot] = p;
            }
            if ((r = after_member(&p, end, '}')) == CLOSED) break;
            if (r != OK) return r;
        }
    }
    *pp = p;
    ev->args_at = start;
    ev->args_end = *pp;
    return OK;
}

/* An event object from its `{` to its `}`. */
static int read_event(Scanner *sc, const unsigned char **pp, const unsigned char *end, Event *ev) {
    const unsigned char *p = skip_ws(*pp + 1, end);
    int r;
    /* Each field set here, not the whole struct cleared: this runs once per event. */
    ev->ph = ev->odd_for_complete = ev->has_name = ev->has_cat = 0;
    ev->ts_fraction = ev->ts_big_fraction = ev->dur_big_fraction = ev->rounded = 0;
    ev->ts = ev->dur = NONE;
    for (int k = 0; k < 5; k++) {
        ev->ids[k] = NONE;
        ev->id_at[k] = NULL;
    }
    ev->args_at = ev->args_end = NULL;
    ev->kept_mask = 0;
    if (p >= end) return END_OF_BUFFER;
    if (*p == '}') {
        p++; /* {} */
    } else {
        for (;;) {
            Str key;
            if ((r = read_key(&p, end, &key)) != OK) return r;
            if (key.escaped) {
                return ODD; /* a key spelt with escapes may be any of the fields */
            } else if (key_is(&key, "ph", 2)) {
                if (*p == '"') {
                    Str s;
                    if ((r = read_string(&p, end, &s)) != OK) return r;
                    ev->ph = (s.len == 1 && !s.escaped) ? s.start[0] : -1;
                } else {
                    ev->ph = -1;
                    r = skip_value(&p, end, 1);
                }
            } else if (key_is(&key, "name", 4) || key_is(&key, "cat", 3)) {
                int is_name = key.len == 4;
                if (*p == '"') {
                    r = read_string(&p, end, is_name ? &ev->name : &ev->cat);
                    if (is_name) ev->has_name = 1;
                    else ev->has_cat = 1;
                } else {
                    ev->odd_for_complete = 1; /* a name that is no string */
                    r = skip_value(&p, end, 1);
                }
            } else if (key_is(&key, "ts", 2) || key_is(&key, "dur", 3)) {
                r = read_time(&p, end, ev, key.len == 2);
            } else if (key_is(&key, "pid", 3) || key_is(&key, "tid", 3)) {
                r = read_id(&p, end, ev, key.start[0] == 't');
            } else if (key_is(&key, "args", 4)) {
                r = read_args(sc, &p, end, ev);
            } else {
                r = skip_value(&p, end, 1);
            }
            if (r != OK) return r;
            if ((r = after_member(&p, end, '}')) == CLOSED) break;
            if (r != OK) return r;
        }
    }
    *pp = p;
    return OK;
}

/* The id of a name or category, decoded and checked as the decoder would; -2: odd. */
static int64_t string_id(Scanner *sc, Intern *t, const Str *s, int present) {
    if (!present) return intern(t, "", 0);
    const char *p = (const char *)s->start;
    size_t n = s->len;
    if (s->escaped && unescape(sc, s, &p, &n) < 0) return -1;
    return intern(t, p, n);
}

typedef struct {
    int status;
    Py_ssize_t close, next; /* the last event's `}`, and where the next one starts */
    int64_t first_ts; /* NONE when no timestamp yet */
    int any_fraction, big_fraction_ts, big_fraction_dur, rounded;
    int ended; /* the array's `]` follows the batch, at next: the rest is the caller's */
    int out_of_memory;
} Result;

static void scan(Scanner *sc, const unsigned char *base, Py_ssize_t len, Py_ssize_t pos, Result *res) {
    const unsigned char *end = base + len, *p = base + pos;
    res->status = ST_NEED_MORE;
    res->close = res->next = -1;
    res->first_ts = NONE;
    res->any_fraction = res->big_fraction_ts = res->big_fraction_dur = res->rounded = 0;
    res->out_of_memory = res->ended = 0;
    for (int c = 0; c < N_COLUMNS; c++) sc->columns[c].len = 0;
    sc->metadata.len = sc->odd_ids.len = sc->kept.len = 0;
    for (;;) {
        p = skip_ws(p, end);
        if (p >= end) return;
        if (*p != '{') {
            res->status = ST_ODD; /* an event that is no object */
            return;
        }
        const unsigned char *start = p;
        Event ev;
        int r = read_event(sc, &p, end, &ev);
        if (r == END_OF_BUFFER) return;
        if (r == ODD) {
            res->status = ST_ODD;
            return;
        }
        const unsigned char *close = p - 1;
        p = skip_ws(p, end);
        if (p >= end) return;
        /* The last event: committed too, the array's `]` and what follows left to the caller. */
        int last = *p == ']';
        if (!last) {
            if (*p != ',') {
                res->status = ST_ODD;
                return;
            }
            p = skip_ws(p + 1, end);
            if (p >= end) return;
            if (*p != '{') {
                res->status = ST_ODD;
                return;
            }
        }
        /* A whole event with a boundary (or the array's end) after it: commit it. */
        if (ev.ph == 'X') {
            if (ev.odd_for_complete) {
                res->status = ST_ODD;
                return;
            }
            int64_t name = string_id(sc, &sc->names, &ev.name, ev.has_name);
            int64_t cat = string_id(sc, &sc->cats, &ev.cat, ev.has_cat);
            if (name == -1 || cat == -1) {
                res->out_of_memory = 1;
                res->status = ST_ODD;
                return;
            }
            if (name == -2 || cat == -2) {
                res->status = ST_ODD; /* not UTF-8: the decoder repairs the batch */
                return;
            }
            Py_ssize_t row = sc->columns[C_TS].len;
            uint32_t kept_mask = ev.kept_mask;
            if (name < sc->n_name_keeps && !sc->name_keeps[name]) kept_mask &= sc->always_kept;
            if (ev.args_at && kept_mask) {
                for (uint32_t m = kept_mask; m; m &= m - 1) {
                    int slot = __builtin_ctz(m);
                    int64_t id = intern(&sc->kept_values[slot], (const char *)ev.kept_at[slot],
                                        (size_t)(ev.kept_end[slot] - ev.kept_at[slot]));
                    if (id == -2) {
                        res->status = ST_ODD; /* not UTF-8: the decoder repairs the batch */
                        return;
                    }
                    if (id == -1 || vec_push(&sc->kept, row) < 0 || vec_push(&sc->kept, slot) < 0 ||
                        vec_push(&sc->kept, id) < 0)
                        res->out_of_memory = 1;
                }
            }
            int64_t values[N_COLUMNS] = {ev.ts, ev.dur, name, cat, ev.ids[0], ev.ids[1], ev.ids[2],
                                         ev.ids[3], ev.ids[4], NONE, NONE};
            if (ev.args_at) {
                values[C_ARGS_AT] = ev.args_at - base;
                values[C_ARGS_END] = ev.args_end - base;
            }
            for (int c = 0; c < N_COLUMNS; c++) {
                if (vec_push(&sc->columns[c], values[c]) < 0) res->out_of_memory = 1;
            }
            for (int k = 0; k < 5; k++) {
                if (ev.id_at[k]) {
                    if (vec_push(&sc->odd_ids, row) < 0 || vec_push(&sc->odd_ids, ID_COLUMN[k]) < 0 ||
                        vec_push(&sc->odd_ids, ev.id_at[k] - base) < 0 ||
                        vec_push(&sc->odd_ids, ev.id_end[k] - base) < 0)
                        res->out_of_memory = 1;
                }
            }
            if (ev.ts != NONE) {
                if (res->first_ts == NONE) res->first_ts = ev.ts;
                res->any_fraction |= ev.ts_fraction;
                res->big_fraction_ts |= ev.ts_big_fraction;
            }
            res->big_fraction_dur |= ev.dur_big_fraction;
            res->rounded |= ev.rounded;
        } else if (ev.ph == 'M') {
            if (vec_push(&sc->metadata, start - base) < 0 || vec_push(&sc->metadata, close + 1 - base) < 0)
                res->out_of_memory = 1;
        } else if (ev.ph <= 0 || !sc->known_phase[ev.ph]) {
            res->status = ST_ODD; /* no phase, or one outside the format */
            return;
        }
        if (res->out_of_memory) {
            res->status = ST_ODD;
            return;
        }
        res->status = ST_BATCH;
        res->close = close - base;
        res->next = p - base;
        if (last) {
            res->ended = 1;
            return;
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Python. */

static void Scanner_dealloc(Scanner *sc) {
    intern_free(&sc->names);
    intern_free(&sc->cats);
    for (int k = 0; k < MAX_KEPT; k++) intern_free(&sc->kept_values[k]);
    PyMem_RawFree(sc->name_keeps);
    PyMem_RawFree(sc->kept.data);
    for (int k = 0; k < sc->n_arg_keys; k++) PyMem_RawFree(sc->arg_key[k]);
    for (int c = 0; c < N_COLUMNS; c++) PyMem_RawFree(sc->columns[c].data);
    PyMem_RawFree(sc->metadata.data);
    PyMem_RawFree(sc->odd_ids.data);
    PyMem_RawFree(sc->scratch);
    Py_TYPE(sc)->tp_free((PyObject *)sc);
}

/* Scanner(known_phases: bytes, arg_keys: sequence of (key: bytes, kind: int, slot: int,
 * always: int)): slot -1 checks a key's value; 0, 1, ... keep it, in that slot of kept_args and
 * new_kept: for the events whose name is flagged (keep_args), or for every event (always 1). */
static int Scanner_init(Scanner *sc, PyObject *args, PyObject *Py_UNUSED(kwds)) {
    Py_buffer phases;
    PyObject *keys;
    if (!PyArg_ParseTuple(args, "y*O", &phases, &keys)) return -1;
    memset(sc->known_phase, 0, sizeof(sc->known_phase));
    for (Py_ssize_t i = 0; i < phases.len; i++) sc->known_phase[((unsigned char *)phases.buf)[i]] = 1;
    PyBuffer_Release(&phases);
    PyObject *seq = PySequence_Fast(keys, "arg_keys: a sequence");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    memset(sc->keys_of_length, 0, sizeof(sc->keys_of_length));
    sc->always_kept = 0;
    if (n > MAX_ARG_KEYS) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "too many arg keys");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *key;
        Py_ssize_t key_len;
        int kind, slot, always;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "y#iii", &key, &key_len, &kind, &slot,
                              &always)) {
            Py_DECREF(seq);
            return -1;
        }
        if (slot < -1 || slot >= MAX_KEPT) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "a kept slot out of range");
            return -1;
        }
        sc->arg_key[i] = PyMem_RawMalloc((size_t)key_len + 1);
        memcpy(sc->arg_key[i], key, (size_t)key_len);
        sc->arg_key_len[i] = (size_t)key_len;
        sc->arg_kind[i] = kind;
        sc->arg_slot[i] = slot;
        if (slot + 1 > sc->n_kept) sc->n_kept = slot + 1;
        if (slot >= 0 && always) sc->always_kept |= 1u << slot;
        sc->keys_of_length[length_slot((size_t)key_len)] |= 1u << i;
        sc->n_arg_keys = (int)i + 1;
    }
    Py_DECREF(seq);
    return 0;
}

static PyObject *vec_bytes(const Vec *v) {
    return PyBytes_FromStringAndSize((const char *)v->data, v->len * (Py_ssize_t)sizeof(int64_t));
}

/* ------------------------------------------------------------------------------------------ */
/* Reading a memory-mapped file: a page that cannot be read (the file was cut short while it was
 * read, an I/O error) raises SIGBUS on the reading thread. While one of ours reads, the handler
 * jumps back out of the read, which then reports a fault instead of ending the process. */

#ifdef GUARD_FAULTS
/* volatile: the handler reads it, so its stores around the read must not be optimized away */
static _Thread_local sigjmp_buf *volatile fault_jump; /* set while this thread reads a buffer */
static struct sigaction previous_bus;
static int guarded_readers;
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_bus(int sig, siginfo_t *info, void *context) {
    (void)sig, (void)info, (void)context;
    if (fault_jump) siglongjmp(*fault_jump, 1);
    /* Not one of our reads: the handler before ours takes the fault when it happens again. */
    sigaction(SIGBUS, &previous_bus, NULL);
}

static void guard_enter(void) {
    pthread_mutex_lock(&guard_lock);
    if (guarded_readers++ == 0) {
        struct sigaction ours;
        memset(&ours, 0, sizeof(ours));
        ours.sa_sigaction = on_bus;
        ours.sa_flags = SA_SIGINFO | SA_NODEFER; /* not left blocked after the jump */
        sigemptyset(&ours.sa_mask);
        sigaction(SIGBUS, &ours, &previous_bus);
    }
    pthread_mutex_unlock(&guard_lock);
}

static void guard_exit(void) {
    pthread_mutex_lock(&guard_lock);
    if (--guarded_readers == 0) sigaction(SIGBUS, &previous_bus, NULL);
    pthread_mutex_unlock(&guard_lock);
}

/* read(arg), with SIGBUS on this thread turned into a return of 1 (0: it ran to its end). */
static int guarded(void (*read)(void *), void *arg) {
    sigjmp_buf jump;
    volatile int faulted = 0;
    guard_enter();
    if (sigsetjmp(jump, 0) == 0) {
        fault_jump = &jump;
        read(arg);
    } else {
        faulted = 1;
    }
    fault_jump = NULL;
    guard_exit();
    return faulted;
}
#else
static int guarded(void (*read)(void *), void *arg) {
    read(arg);
    return 0;
}
#endif

/* guarded(read, arg) without the GIL, then `buf` (what it read) released: 1 where it faulted. */
static int guarded_unlocked(void (*read)(void *), void *arg, Py_buffer *buf) {
    int faulted;
    Py_BEGIN_ALLOW_THREADS
    faulted = guarded(read, arg);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(buf);
    return faulted;
}

typedef struct {
    void *to;
    const void *from;
    size_t n;
} Copy;

static void run_copy(void *arg) {
    Copy *c = arg;
    memcpy(c->to, c->from, c->n);
}

/* copy(buf) -> bytes, or None where a page of buf could not be read. */
static PyObject *guarded_copy(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*", &buf)) return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, buf.len);
    if (!out) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    Copy copy = {PyBytes_AS_STRING(out), buf.buf, (size_t)buf.len};
    if (guarded_unlocked(run_copy, &copy, &buf)) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    return out;
}

typedef struct {
    Scanner *sc;
    const unsigned char *base;
    Py_ssize_t len, pos;
    Result *res;
} ScanCall;

static void run_scan(void *arg) {
    ScanCall *c = arg;
    scan(c->sc, c->base, c->len, c->pos, c->res);
}

/* scan(buf, pos) -> ScanResult, its fields named in SCAN_FIELDS (and _scan.pyi).
 * columns: N_COLUMNS int64 arrays one after the other; NONE (INT64_MIN) marks a missing value. */
static PyStructSequence_Field SCAN_FIELDS[] = {
    {"status", "NEED_MORE, BATCH, ODD or FAULT"},
    {"close", "the `}` the batch ends at"},
    {"next", "where the next event starts"},
    {"columns", "bytes: N_COLUMNS int64 arrays, one after the other"},
    {"metadata", "bytes: (start, end) int64 pairs of the metadata events"},
    {"odd_ids", "bytes: (row, column, start, end) int64 quads of ids left to Python"},
    {"new_names", "names first seen in this batch, in id order"},
    {"new_categories", "categories first seen in this batch, in id order"},
    {"kept_args", "bytes: (row, slot, value id) int64 triples of kept args, where recorded"},
    {"new_kept", "by kept slot, the value texts first seen in this batch, in id order"},
    {"first_ts", "the first timestamp in ns, or None"},
    {"any_fraction", "a timestamp had a fraction"},
    {"big_fraction_ts", "a timestamp with a fraction beyond float64's exact range"},
    {"big_fraction_dur", "a duration with a fraction beyond float64's exact range"},
    {"rounded", "a time with more than 3 decimals, read as float64 reads it"},
    {"ended", "the array's `]` follows the batch, at next"},
    {NULL, NULL},
};
static PyStructSequence_Desc SCAN_RESULT_DESC = {
    "traceview.parse._scan.ScanResult", "What one call of Scanner.scan found.", SCAN_FIELDS,
    sizeof(SCAN_FIELDS) / sizeof(SCAN_FIELDS[0]) - 1,
};
static PyTypeObject *ScanResultType;
static PyObject *Scanner_scan(Scanner *sc, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t pos;
    if (!PyArg_ParseTuple(args, "y*n", &buf, &pos)) return NULL;
    if (pos < 0 || pos > buf.len) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "pos outside the buffer");
        return NULL;
    }
    Result res;
    ScanCall call = {sc, (const unsigned char *)buf.buf, buf.len, pos, &res};
    if (guarded_unlocked(run_scan, &call, &buf)) {
        res.status = ST_FAULT; /* the columns so far are left, unread */
        res.out_of_memory = 0;
        for (int c = 0; c < N_COLUMNS; c++) sc->columns[c].len = 0;
        sc->metadata.len = sc->odd_ids.len = sc->kept.len = 0;
    }
    if (res.out_of_memory) return PyErr_NoMemory();
    Py_ssize_t rows = sc->columns[C_TS].len;
    PyObject *columns = PyBytes_FromStringAndSize(NULL, rows * N_COLUMNS * (Py_ssize_t)sizeof(int64_t));
    if (!columns) return NULL;
    char *out = PyBytes_AS_STRING(columns);
    for (int c = 0; c < N_COLUMNS && rows > 0; c++) /* no rows: a column may have no buffer yet */
        memcpy(out + c * rows * sizeof(int64_t), sc->columns[c].data, rows * sizeof(int64_t));
    PyObject *first_ts = res.first_ts == NONE ? Py_NewRef(Py_None) : PyLong_FromLongLong(res.first_ts);
    PyObject *new_kept = PyTuple_New(sc->n_kept);
    for (int k = 0; new_kept && k < sc->n_kept; k++) {
        PyObject *texts = intern_new(&sc->kept_values[k]);
        if (!texts) Py_CLEAR(new_kept);
        else PyTuple_SET_ITEM(new_kept, k, texts);
    }
    PyObject *fields = Py_BuildValue("innNNNNNNNNNNNNN", res.status, res.close, res.next, columns,
                                     vec_bytes(&sc->metadata), vec_bytes(&sc->odd_ids),
                                     intern_new(&sc->names), intern_new(&sc->cats),
                                     vec_bytes(&sc->kept), new_kept, first_ts,
                                     PyBool_FromLong(res.any_fraction),
                                     PyBool_FromLong(res.big_fraction_ts),
                                     PyBool_FromLong(res.big_fraction_dur),
                                     PyBool_FromLong(res.rounded), PyBool_FromLong(res.ended));
    if (!fields) return NULL;
    PyObject *result = PyStructSequence_New(ScanResultType);
    if (!result) {
        Py_DECREF(fields);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields); i++)
        PyStructSequence_SET_ITEM(result, i, Py_NewRef(PyTuple_GET_ITEM(fields, i)));
    Py_DECREF(fields);
    return result;
}

/* keep_args(flags: bytes): by name id, whether its events' kept args are recorded. */
static PyObject *Scanner_keep_args(Scanner *sc, PyObject *args) {
    Py_buffer flags;
    if (!PyArg_ParseTuple(args, "y*", &flags)) return NULL;
    unsigned char *copy = PyMem_RawMalloc(flags.len ? (size_t)flags.len : 1);
    if (!copy) {
        PyBuffer_Release(&flags);
        return PyErr_NoMemory();
    }
    memcpy(copy, flags.buf, (size_t)flags.len);
    PyMem_RawFree(sc->name_keeps);
    sc->name_keeps = copy;
    sc->n_name_keeps = flags.len;
    PyBuffer_Release(&flags);
    Py_RETURN_NONE;
}

static PyMethodDef Scanner_methods[] = {
    {"scan", (PyCFunction)Scanner_scan, METH_VARARGS,
     "scan(buf, pos): the events from pos up to the last event boundary, as columns."},
    {"keep_args", (PyCFunction)Scanner_keep_args, METH_VARARGS,
     "keep_args(flags): by name id, 1 where its events' kept args are recorded."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "traceview.parse._scan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
    .tp_doc = "Complete events of a trace into columns; one per trace and thread.",
};

static PyMethodDef module_methods[] = {
    {"copy", guarded_copy, METH_VARARGS,
     "copy(buf) -> bytes, or None where a page of buf could not be read (a mapped file cut short)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_scan",
    .m_doc = "The compiled fast path of the trace parser.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__scan(void) {
    init_tables();
    if (PyType_Ready(&ScannerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(&ScannerType);
        Py_DECREF(m);
        return NULL;
    }
    ScanResultType = PyStructSequence_NewType(&SCAN_RESULT_DESC);
    if (!ScanResultType || PyModule_AddObject(m, "ScanResult", (PyObject *)ScanResultType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(ScanResultType); /* the module's reference above, and this file's own */
    PyObject *names = PyTuple_New(N_COLUMNS);
    if (!names) {
        Py_DECREF(m);
        return NULL;
    }
    for (int c = 0; c < N_COLUMNS; c++) PyTuple_SET_ITEM(names, c, PyUnicode_FromString(COLUMN_NAMES[c]));
    if (PyModule_AddObject(m, "COLUMNS", names) < 0) {
        Py_DECREF(names);
        Py_DECREF(m);
        return NULL;
    }
    PyModule_AddIntConstant(m, "NEED_MORE", ST_NEED_MORE);
    PyModule_AddIntConstant(m, "BATCH", ST_BATCH);
    PyModule_AddIntConstant(m, "ODD", ST_ODD);
    PyModule_AddIntConstant(m, "FAULT", ST_FAULT);
    /* How Scanner() is told to check each declared arg. */
    PyModule_AddIntConstant(m, "ARG_CORRELATION", K_CORR);
    PyModule_AddIntConstant(m, "ARG_DEVICE", K_DEVICE);
    PyModule_AddIntConstant(m, "ARG_STREAM", K_STREAM);
    PyModule_AddIntConstant(m, "ARG_LOOSE", K_LOOSE);
    PyModule_AddIntConstant(m, "ARG_RAW", K_RAW);
    PyModule_AddIntConstant(m, "ARG_TEXT_OR_NULL", K_TEXT_OR_NULL);
    return m;
}
