# An allocation-heavy Python script for it_heap_debian: records, JSON, joined strings.
import json
def build_records(n):
    return [{"id": i, "name": "user-%d" % i, "tags": ["t%d" % (i % 7), "x" * (i % 50)]} for i in range(n)]
def serialize(recs):
    return [json.dumps(r) for r in recs]
def big_strings(n):
    return ["".join(str(j) for j in range(i % 300)) for i in range(n)]
keep = build_records(60000)
s = serialize(keep)
b = big_strings(20000)
d = {k: v for k, v in zip(s, b)}
print(len(d))
