/* Walk the records of a RecordBatch v2 without building them: the produce path's check that every record reads.
 *
 * Why hand-written C: reading each record with aiokafka's Cython reader (record objects, key and value copies)
 * cost 95-135 ns a record, about 1 s of broker CPU per GB of 100-byte records and more for compressed batches; no
 * library walks Kafka records without building them. The rules are Kafka 4.4's DefaultRecord.readFrom, and
 * compat/wire/record_walk.py holds the same walk in Python: it is the reference the tests compare this one with
 * (tests/compat/test_record_walk.py), and the fallback where no compiler built this module.
 *
 * The input is hostile: every read is checked against the end of the record it is in, and the record against
 * the end of the buffer, before the byte is touched; nothing is allocated but the answer and, for a header key
 * that is not ASCII, one str to check its UTF-8. Arithmetic on timestamps wraps as Java's long does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef struct {
    const unsigned char *at;
    const unsigned char *end;
} span;

/* Kafka's ByteUtils.readVarint (`most` 5 bytes) and readVarlong (10): the bits read, zigzag not yet undone. */
static int read_bits(span *s, int most, uint64_t *out) {
    uint64_t value = 0;
    for (int shift = 0; shift < 7 * most; shift += 7) {
        if (s->at >= s->end) {
            return -1;
        }
        unsigned char byte = *s->at++;
        value |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) {
            *out = value;
            return 0;
        }
    }
    return -1;
}

static int read_varint(span *s, int32_t *out) {
    uint64_t bits;
    if (read_bits(s, 5, &bits)) {
        return -1;
    }
    uint32_t value = (uint32_t)bits; /* bits past 32 dropped, as Java's int shift drops them */
    *out = (int32_t)((value >> 1) ^ (0u - (value & 1u)));
    return 0;
}

static int read_varlong(span *s, int64_t *out) {
    uint64_t value;
    if (read_bits(s, 10, &value)) {
        return -1;
    }
    *out = (int64_t)((value >> 1) ^ ((uint64_t)0 - (value & 1u)));
    return 0;
}

/* Skip `size` bytes of the span if they are there (a negative size is a null field: nothing to skip). */
static int skip(span *s, int32_t size) {
    if (size <= 0) {
        return 0;
    }
    if ((Py_ssize_t)size > s->end - s->at) {
        return -1;
    }
    s->at += size;
    return 0;
}

/* A header key must decode as UTF-8 (the broker's own readers decode it); ASCII needs no decoder. */
static int utf8_key(const unsigned char *key, int32_t size) {
    for (int32_t i = 0; i < size; i++) {
        if (key[i] & 0x80) {
            PyObject *text = PyUnicode_DecodeUTF8((const char *)key, size, "strict");
            if (text == NULL) {
                PyErr_Clear();
                return -1;
            }
            Py_DECREF(text);
            return 0;
        }
    }
    return 0;
}

/* One record's body (after its length): the reason it does not read, or NULL. */
static const char *read_record(span *record, int64_t *timestamp_delta, int32_t *offset_delta) {
    int32_t key_size, value_size, header_count;
    if (record->at >= record->end) {
        return "a record ends before its attributes";
    }
    record->at++; /* attributes: one byte, unused by RecordBatch v2 */
    if (read_varlong(record, timestamp_delta) || read_varint(record, offset_delta)) {
        return "a record's timestamp or offset delta does not read";
    }
    if (read_varint(record, &key_size) || skip(record, key_size)) {
        return "a record's key runs past the record";
    }
    if (read_varint(record, &value_size) || skip(record, value_size)) {
        return "a record's value runs past the record";
    }
    if (read_varint(record, &header_count)) {
        return "a record's header count does not read";
    }
    if (header_count < 0) {
        return "a record has a negative number of headers";
    }
    for (int32_t header = 0; header < header_count; header++) {
        int32_t header_key_size, header_value_size;
        if (read_varint(record, &header_key_size)) {
            return "a header key's size does not read";
        }
        if (header_key_size < 0) {
            return "a header key has a negative size";
        }
        if ((Py_ssize_t)header_key_size > record->end - record->at) {
            return "a header key runs past the record";
        }
        if (utf8_key(record->at, header_key_size)) {
            return "a header key is not UTF-8";
        }
        record->at += header_key_size;
        if (read_varint(record, &header_value_size) || skip(record, header_value_size)) {
            return "a header value runs past the record";
        }
    }
    if (record->at != record->end) {
        return "a record's fields do not add up to its length";
    }
    return NULL;
}

PyDoc_STRVAR(walk_doc,
"walk(records, count, first_timestamp, earliest, latest, check_timestamps, offsets_from_zero)\n"
"--\n\n"
"Read `count` records; raise ValueError naming the first that does not read or bytes left after them. Return\n"
"(position of the first offset delta that is not its position, or -1; that delta; position of the first\n"
"timestamp outside [earliest, latest], -1 timestamps not checked, or -1; that timestamp; the longest record's\n"
"length, its body without the length varint, as max.decompressed.message.bytes measures it).");

static PyObject *walk(PyObject *module, PyObject *args) {
    Py_buffer buffer;
    long long count, first_timestamp, earliest, latest;
    int check_timestamps, offsets_from_zero;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*LLLLpp", &buffer, &count, &first_timestamp, &earliest, &latest,
                          &check_timestamps, &offsets_from_zero)) {
        return NULL;
    }
    span rest = {(const unsigned char *)buffer.buf, (const unsigned char *)buffer.buf + buffer.len};
    Py_ssize_t offset_at = -1, timestamp_at = -1;
    int32_t offset_found = 0, longest = 0;
    int64_t timestamp_found = 0;
    const char *problem = NULL;
    long long position;
    for (position = 0; position < count; position++) {
        int32_t length, offset_delta = 0;
        int64_t timestamp_delta = 0;
        if (rest.at >= rest.end) {
            problem = "the batch's bytes end before its record count does";
            break;
        }
        if (read_varint(&rest, &length)) {
            problem = "a record's length does not read";
            break;
        }
        if (length < 0 || (Py_ssize_t)length > rest.end - rest.at) {
            problem = "a record's length runs past the batch";
            break;
        }
        if (length > longest) {
            longest = length;
        }
        span record = {rest.at, rest.at + length};
        problem = read_record(&record, &timestamp_delta, &offset_delta);
        if (problem != NULL) {
            break;
        }
        rest.at = record.end;
        if (offsets_from_zero && offset_at < 0 && (long long)offset_delta != position) {
            offset_at = (Py_ssize_t)position;
            offset_found = offset_delta;
        }
        if (check_timestamps && timestamp_at < 0) {
            int64_t timestamp = (int64_t)((uint64_t)first_timestamp + (uint64_t)timestamp_delta);
            if (timestamp != -1 && (timestamp < earliest || timestamp > latest)) {
                timestamp_at = (Py_ssize_t)position;
                timestamp_found = timestamp;
            }
        }
    }
    if (problem == NULL && rest.at != rest.end) {
        problem = "bytes are left after the batch's last record";
    }
    PyBuffer_Release(&buffer);
    if (problem != NULL) {
        PyErr_Format(PyExc_ValueError, "record %lld: %s", position, problem);
        return NULL;
    }
    return Py_BuildValue("(ninLi)", offset_at, (int)offset_found, timestamp_at, (long long)timestamp_found,
                         (int)longest);
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, walk_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef record_walk_module = {
    PyModuleDef_HEAD_INIT, "_record_walk", "Kafka RecordBatch v2 records walked in C (see record_walk.py).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__record_walk(void) {
    return PyModule_Create(&record_walk_module);
}
