"""A gzip-compressed profile.proto's top-level varint fields, read without
a protobuf library: time_nanos (9) and duration_nanos (10) among them.

As a program: `profile_fields.py FILE...` prints "time_nanos end_nanos"
(end = time + duration) for each FILE, a line each."""
import gzip
import sys


def top_fields(path):
    """{field number: value} of the profile's top-level varints."""
    b, i, f = gzip.open(path).read(), 0, {}

    def varint():
        nonlocal i
        v = s = 0
        while True:
            c = b[i]
            i += 1
            v |= (c & 0x7F) << s
            s += 7
            if c < 0x80:
                return v

    while i < len(b):
        key = varint()
        field, wire = key >> 3, key & 7
        if wire == 0:
            f[field] = varint()
        elif wire == 2:
            n = varint()  # before i is read: varint moves it
            i += n
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise SystemExit("%s: wire type %d" % (path, wire))
    return f


if __name__ == "__main__":
    for p in sys.argv[1:]:
        f = top_fields(p)
        print(f.get(9, 0), f.get(9, 0) + f.get(10, 0))
