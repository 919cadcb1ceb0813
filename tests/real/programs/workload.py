# A workload for Debian's python3 under cprof (tests/real/python3.sh, bench/real):
# dictionaries, strings, sorting, json and big integers, printing results
# that depend only on the computation. With an argument (a shell command) it
# then holds what it built, prints tracemalloc's figures and runs the command
# (the test fetches the heap profile there), so both describe one moment.
import json
import sys
import tracemalloc
import zlib

words = {}
for i in range(300000):
    w = format(i * 2654435761 % 1000003, "x")
    words[w] = words.get(w, 0) + len(w)
print("words", len(words), sum(words.values()))

rows = sorted(((v, k) for k, v in words.items()), reverse=True)[:5]
print("top", rows)

doc = json.dumps({k: [v, k * 3] for k, v in list(words.items())[:50000]})
back = json.loads(doc)
print("json", len(doc), zlib.crc32(doc.encode()), len(back))
del doc, back

n = 1
for i in range(1, 3000):
    n = n * i % (10 ** 600 + 7)
print("factorial mod", n % 1000000007)

# What the heap check holds: a few tens of thousands of objects, most of the
# bytes in large ones, so tracemalloc's own tables (a trace per object) stay
# small next to them.
del words, rows
held = [("item-%d" % i, b"x" * (i % 4000)) for i in range(20000)]
print("held", len(held), sum(len(b) for _, b in held))

if len(sys.argv) > 1:
    import os
    traced = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
    print("traced", traced, "tracemalloc_own", tracemalloc.get_tracemalloc_memory(), flush=True)
    os.system(sys.argv[1])
