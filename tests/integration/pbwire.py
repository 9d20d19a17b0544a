"""Protobuf wire format, read without generated code, for the integration
helpers that look inside what crosses a boundary (push frames, replies, the
OpenTelemetry process context, pprof labels).

  varint(b, i) -> (value, next i)
  fields(b)    -> yields (field number, wire type, value) of one message:
                  an int for varints, bytes for the other wire types

Truncated input, over-long varints and groups raise ValueError."""


def varint(b, i):
    v = shift = 0
    while True:
        if i >= len(b) or shift > 63:
            raise ValueError("truncated or over-long varint")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
            yield num, wt, v
            continue
        if wt == 2:
            n, i = varint(b, i)
        elif wt in (1, 5):
            n = 8 if wt == 1 else 4
        else:
            raise ValueError("field %d: wire type %d" % (num, wt))
        if i + n > len(b):
            raise ValueError("field %d: truncated" % num)
        yield num, wt, bytes(b[i:i + n])
        i += n
