"""Cross-checks sluice's CBOR with Python's cbor2 (run by schemas_test).

argv[1]: CBOR written by sluice for schemas_test's Sample() gateway record. We decode it with
cbor2, compare every value with what Sample() holds, then re-encode it with cbor2 (canonical
form, one field changed) to argv[2] for sluice to decode.
"""

import sys

import cbor2

with open(sys.argv[1], "rb") as f:
    record = cbor2.load(f)

expected = {
    "request_id": "req-0001",
    "user_id": "user-7",
    "conversation_id": "conv-42",
    "model": "model-large",
    "received_at": 1764486540123456,
    "messages": [
        {"role": "system", "content": "You are terse.", "name": None},
        {"role": "user", "content": "Grüße, 世界! 🚀", "name": "ana"},
        {"role": "assistant", "content": "", "name": None},
        {"role": "user", "content": "x" * 5000, "name": None},
    ],
}
if record != expected:
    print(f"cbor2 decoded {record!r}\nexpected {expected!r}", file=sys.stderr)
    sys.exit(1)

record["request_id"] = "req-from-cbor2"
with open(sys.argv[2], "wb") as f:
    cbor2.dump(record, f, canonical=True)
