"""`sluice example-data conversations`: deterministic gateway JSONL, with counts checked
independently in Python."""

import json
import re

import pytest


def _objects(s, prefix="raw/conversations/"):
    listing = s.run("store", "ls", prefix, check=True).stdout.decode().split("\n")
    return [line.split()[1] for line in listing if line.strip()]


def test_counts_match_an_independent_reading(store_sluice):
    out = store_sluice.run("example-data", "conversations", "--objects", "4",
                           "--requests-per-object", "60", check=True).stdout.decode()
    keys = _objects(store_sluice)
    assert keys == [f"raw/conversations/gateway-{i:05d}.jsonl" for i in range(4)]
    requests = messages = 0
    distinct = set()
    conversations = set()
    saw = {"empty": False, "long": False, "non_ascii": False, "tool": False}
    for key in keys:
        data = store_sluice.run("store", "get", key, check=True).stdout.decode("utf-8")
        for line in data.splitlines():
            r = json.loads(line)
            assert set(r) == {"request_id", "user_id", "conversation_id", "model", "received_at",
                              "messages"}
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", r["received_at"])
            requests += 1
            conversations.add(r["conversation_id"])
            for pos, m in enumerate(r["messages"]):
                assert set(m) == {"role", "content", "name"}
                messages += 1
                distinct.add((r["conversation_id"], pos))
                saw["empty"] |= m["content"] == ""
                saw["long"] |= len(m["content"]) > 10000
                saw["non_ascii"] |= any(ord(ch) > 127 for ch in m["content"])
                saw["tool"] |= m["role"] == "tool"
    assert requests == 240
    assert f"{requests} requests, {len(conversations)} conversations, {messages} messages " \
           f"({len(distinct)} distinct)" in out
    assert messages > len(distinct), "requests must repeat history, or dedup has nothing to do"
    assert all(saw.values()), saw


def test_same_seed_same_bytes(sluice, tmp_path):
    sluice.run("example-data", "conversations", "--objects", "2", "--seed", "11", check=True)
    first = sluice.run("store", "get", "raw/conversations/gateway-00001.jsonl", check=True).stdout
    sluice.run("example-data", "conversations", "--objects", "2", "--seed", "11", check=True)
    again = sluice.run("store", "get", "raw/conversations/gateway-00001.jsonl", check=True).stdout
    assert first == again
    sluice.run("example-data", "conversations", "--objects", "2", "--seed", "12", check=True)
    other = sluice.run("store", "get", "raw/conversations/gateway-00001.jsonl", check=True).stdout
    assert other != first


def test_bad_arguments(sluice):
    proc = sluice.run("example-data", "conversations", "--objects", "-1")
    assert proc.returncode == 1
    assert "objects >= 0" in proc.stderr.decode()
    proc = sluice.run("example-data", "conversations", "--objects", "many")
    assert proc.returncode == 2
