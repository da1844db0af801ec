"""Schemas travel with the artifact: a transform written in plain C against
include/sluice/transform_abi.h alone, in a directory outside the checkout, declares its own
record type (Arrow IPC schema messages made here with pyarrow), is published, chained after the
example, and its output is checked row for row. Also the rules for `any`: it cannot read a
source, it accepts whatever the stage before writes, a typed stage after it is checked when the
data flows, and an `any` output is fixed by the first stream emitted."""

import re
import shutil
import subprocess

import pyarrow as pa
import pytest

from conftest import ROOT, Sluice, base_env
from test_submit import JOBS, PIN, expected_rows, prepare, put_objects, read_output, rows_of

# The example's output schema, as its identity declares it: the C transform reads it.
EXTRACTED_ID = "sluice.examples.conversation.ConversationMessageExtracted"
EXTRACTED = pa.schema([
    pa.field("primary_key", pa.string(), False),
    pa.field("data_hash", pa.binary(32), False),
    pa.field("conversation_id", pa.string(), False),
    pa.field("user_id", pa.string(), False),
    pa.field("position", pa.int64(), False),
    pa.field("role", pa.string(), False),
    pa.field("content", pa.string(), False),
    pa.field("name", pa.string(), True),
    pa.field("request_id", pa.string(), False),
    pa.field("received_at", pa.timestamp("us", tz="UTC"), False),
])
# The C transform's own record type: the same columns under its own names.
RENAMES = {"primary_key": "pk", "data_hash": "hash", "conversation_id": "conversation",
           "user_id": "user", "position": "pos", "role": "speaker_role", "content": "text",
           "name": "speaker", "request_id": "request", "received_at": "received"}
RENAMED_ID = "thirdparty.RenamedMessage"
RENAMED = pa.schema([f.with_name(RENAMES[f.name]) for f in EXTRACTED],
                    metadata={"sluice.schema": RENAMED_ID})

# A plain C transform. It never decodes Arrow data: an IPC stream is a schema message followed
# by record batch messages that refer to buffers by position, so swapping the schema message
# for another with the same types renames the columns. MODE:
#   RENAME   emit the input with the output schema message in place of its own;
#   IDENTITY emit the input unchanged;
#   TWICE    emit the input unchanged, then renamed: two streams with different schemas;
#   NOTHING  emit no stream at all.
C_SOURCE = r"""
#include <sluice/transform_abi.h>
#include <stdlib.h>
#include <string.h>

#define MODE_RENAME 0
#define MODE_IDENTITY 1
#define MODE_TWICE 2
#define MODE_NOTHING 3

static const uint8_t kOutputSchema[] = {@OUTPUT_BYTES@};

__attribute__((visibility("default"))) const uint32_t transform_batch_abi_version =
    SLUICE_TRANSFORM_ABI_VERSION;

__attribute__((visibility("default"), used, section(SLUICE_TRANSFORM_IDENTITY_SECTION)))
const char transform_batch_identity[] = SLUICE_TRANSFORM_IDENTITY_MAGIC
    "{\"abi_version\":" SLUICE_TRANSFORM_ABI_VERSION_TEXT ",\"qualified_name\":\"@NAME@\","
    "\"version\":\"1.0.0\",\"input_schema\":\"@INPUT_ID@\",\"output_schema\":\"@OUTPUT_ID@\""
    @ARROW_FIELDS@ "}";

static int32_t Fail(const sluice_transform_host* host, const char* message) {
  host->set_error(host->ctx, message, strlen(message));
  return SLUICE_TRANSFORM_ERROR;
}

static int32_t EmitRenamed(const uint8_t* input, size_t len, const sluice_transform_host* host) {
  /* The first message: 0xFFFFFFFF, a little-endian int32 metadata length, the metadata; a
   * schema message has no body. */
  if (len < 8 || memcmp(input, "\xff\xff\xff\xff", 4) != 0) {
    return Fail(host, "input is not an Arrow IPC stream");
  }
  const uint32_t meta = (uint32_t)input[4] | (uint32_t)input[5] << 8 |
                        (uint32_t)input[6] << 16 | (uint32_t)input[7] << 24;
  if (meta > len - 8) return Fail(host, "input schema message is truncated");
  const size_t rest = len - 8 - meta;
  uint8_t* out = malloc(sizeof(kOutputSchema) + rest);
  if (out == NULL) return Fail(host, "out of memory");
  memcpy(out, kOutputSchema, sizeof(kOutputSchema));
  memcpy(out + sizeof(kOutputSchema), input + 8 + meta, rest);
  const int32_t rc = host->emit(host->ctx, out, sizeof(kOutputSchema) + rest);
  free(out);
  return rc == 0 ? SLUICE_TRANSFORM_OK : SLUICE_TRANSFORM_ERROR;
}

__attribute__((visibility("default"))) int32_t transform_batch(
    const uint8_t* input, size_t len, const sluice_transform_host* host) {
  if (MODE == MODE_NOTHING) return SLUICE_TRANSFORM_OK;
  if (MODE == MODE_RENAME) return EmitRenamed(input, len, host);
  if (host->emit(host->ctx, input, len) != 0) return SLUICE_TRANSFORM_ERROR;
  if (MODE == MODE_TWICE) return EmitRenamed(input, len, host);
  return SLUICE_TRANSFORM_OK;
}
"""

C_CMAKE = """cmake_minimum_required(VERSION 3.25)
project(@NAME@ LANGUAGES C)
add_library(@NAME@ SHARED src/transform.c)
target_include_directories(@NAME@ PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include)
target_compile_options(@NAME@ PRIVATE -Wall -Wextra -Werror)
set_target_properties(@NAME@ PROPERTIES C_VISIBILITY_PRESET hidden)
"""


def c_transform(parent, name, mode, input_id, input_schema, output_id, output_schema):
    """Writes a plain C transform directory with its own CMake project and metadata, and the ABI
    header copied in: nothing refers to the sluice checkout."""
    d = parent / name
    (d / "src").mkdir(parents=True)
    (d / "include" / "sluice").mkdir(parents=True)
    shutil.copy(ROOT / "include" / "sluice" / "transform_abi.h", d / "include" / "sluice")
    fields = ""
    if input_schema is not None:
        fields += f'",\\"input_arrow_schema\\":\\"{input_schema.serialize().to_pybytes().hex()}\\""'
    if output_schema is not None:
        fields += f'",\\"output_arrow_schema\\":\\"{output_schema.serialize().to_pybytes().hex()}\\""'
    source = (C_SOURCE.replace("@NAME@", name).replace("@INPUT_ID@", input_id)
              .replace("@OUTPUT_ID@", output_id).replace("@ARROW_FIELDS@", fields)
              .replace("@OUTPUT_BYTES@",
                       ",".join(str(b) for b in RENAMED.serialize().to_pybytes())))
    (d / "src" / "transform.c").write_text(f"#define MODE MODE_{mode}\n" + source)
    (d / "CMakeLists.txt").write_text(C_CMAKE.replace("@NAME@", name))
    (d / "transform.toml").write_text(f"""[transform]
qualified_name = "{name}"
version = "1.0.0"
input_dataset = "derived/conversation-messages"
output_dataset = "derived/{name}"
input_schema = "{input_id}"
output_schema = "{output_id}"
example_job = "job.toml"
pipeline = "pipeline.toml"
""")
    (d / "pipeline.toml").write_text(f"""[pipeline]
name = "{name}"

[[pipeline.stages]]
kind = "function"
qualified_name = "{name}"
pin_artifact_hash = "PUBLISH_RESULT_GOES_HERE"
""")
    (d / "job.toml").write_text(f"""[dataflow.source]
kind = "parquet"
prefix = "derived/conversation-messages/"

[[dataflow.stages]]
kind = "function"
qualified_name = "{name}"
pin_artifact_hash = "PUBLISH_RESULT_GOES_HERE"

[dataflow.sink]
kind = "parquet"
path = "derived/{name}/{{run_id}}"
""")
    return d


def publish(sluice, d):
    out = sluice.run("transform", "publish", d)
    assert out.returncode == 0, out.stderr.decode()[-3000:]
    return re.fullmatch(r"registered transform=\S+ artifact_blake3=([0-9a-f]{64})\n",
                        out.stdout.decode()).group(1)


def stage(name, pin):
    return f"""
[[dataflow.stages]]
kind = "function"
qualified_name = "{name}"
pin_artifact_hash = "{pin}"
"""


def write_job(tmp_path, file, source, stages, sink, dedup=None):
    text = source + "".join(stage(n, p) for n, p in stages)
    if dedup:
        text += f'\n[[dataflow.stages]]\nkind = "dedup"\nkey = "{dedup}"\n'
    text += f'\n[dataflow.sink]\nkind = "parquet"\npath = "{sink}/{{run_id}}"\n'
    path = tmp_path / file
    path.write_text(text)
    return path


JSONL_SOURCE = '[dataflow.source]\nkind = "jsonl"\nprefix = "raw/conversations/"\nlimit = 4\n'


@pytest.fixture(scope="module")
def third_party(sluice_bin, tmp_path_factory):
    """A home with example data, the example and three plain C transforms published from a
    directory outside the checkout."""
    outside = tmp_path_factory.mktemp("third-party")
    assert ROOT not in outside.parents
    sluice = Sluice(sluice_bin, base_env(outside / "home"))
    prepare(sluice, objects=4)
    pins = {}
    for name, mode, in_id, in_schema, out_id, out_schema in [
            ("plain-c-rename", "RENAME", EXTRACTED_ID, EXTRACTED, RENAMED_ID, RENAMED),
            ("plain-c-identity", "IDENTITY", "any", None, "any", None),
            ("plain-c-twice", "TWICE", "any", None, "any", None),
            ("plain-c-nothing", "NOTHING", "any", None, "any", None),
            # Typed ids without Arrow schemas, as a library built before schemas travelled.
            ("plain-c-untyped", "IDENTITY", EXTRACTED_ID, None, EXTRACTED_ID, None)]:
        d = c_transform(outside, name, mode, in_id, in_schema, out_id, out_schema)
        # It is plain C against the ABI header alone: cc builds it warning-free.
        subprocess.run(["cc", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror",
                        "-I", str(d / "include"), "-o", str(outside / f"{name}-cc.so"),
                        str(d / "src" / "transform.c")], check=True)
        pins[name] = publish(sluice, d)
    return sluice, pins, outside


def test_check_prints_the_declared_schemas(third_party):
    sluice, _, outside = third_party
    out = sluice.run("transform", "check", outside / "plain-c-rename", check=True).stdout.decode()
    assert f"input schema: {EXTRACTED_ID}\n  primary_key: string not null\n" in out
    assert f"output schema: {RENAMED_ID}\n  pk: string not null\n" in out
    assert "  received: timestamp[us, tz=UTC] not null\n" in out
    out = sluice.run("transform", "check", outside / "plain-c-identity",
                     check=True).stdout.decode()
    assert "input schema: any (accepts whatever the previous stage writes)" in out


def test_a_plain_c_transform_with_its_own_schema_runs_after_the_example(third_party, tmp_path):
    sluice, pins, _ = third_party
    j = write_job(tmp_path, "chain.toml", JSONL_SOURCE,
                  [("conversation-message-extract", PIN), ("plain-c-rename", pins["plain-c-rename"])],
                  "derived/renamed", dedup="hash")
    sluice.run("submit", "--manifest", j, "--run-id", "renamed-1", check=True)
    table, _ = read_output(sluice, "derived/renamed/renamed-1", tmp_path)
    assert [(f.name, f.type, f.nullable) for f in table.schema] == \
        [(f.name, f.type, f.nullable) for f in RENAMED]
    back = table.rename_columns([{v: k for k, v in RENAMES.items()}.get(c, c)
                                 for c in table.column_names])
    assert rows_of(back) == expected_rows(sluice, 4)


def test_any_follows_a_typed_stage_and_a_typed_stage_follows_any(third_party, tmp_path):
    sluice, pins, _ = third_party
    j = write_job(tmp_path, "any.toml", JSONL_SOURCE,
                  [("conversation-message-extract", PIN),
                   ("plain-c-identity", pins["plain-c-identity"]),
                   ("plain-c-rename", pins["plain-c-rename"])],
                  "derived/through-any", dedup="hash")
    sluice.run("submit", "--manifest", j, "--run-id", "through-any", check=True)
    table, _ = read_output(sluice, "derived/through-any/through-any", tmp_path)
    back = table.rename_columns([{v: k for k, v in RENAMES.items()}.get(c, c)
                                 for c in table.column_names])
    assert rows_of(back) == expected_rows(sluice, 4)


def test_a_typed_stage_after_any_is_checked_when_the_data_flows(third_party, tmp_path):
    sluice, pins, _ = third_party
    # Renamed rows are committed first; read back through `any`, they reach a stage that reads
    # the example's schema, which they do not have.
    j = write_job(tmp_path, "renamed.toml", JSONL_SOURCE,
                  [("conversation-message-extract", PIN), ("plain-c-rename", pins["plain-c-rename"])],
                  "derived/renamed-src")
    sluice.run("submit", "--manifest", j, "--run-id", "src-1", check=True)
    source = '[dataflow.source]\nkind = "parquet"\nprefix = "derived/renamed-src/"\n'
    j = write_job(tmp_path, "wrong.toml", source,
                  [("plain-c-identity", pins["plain-c-identity"]),
                   ("plain-c-rename", pins["plain-c-rename"])], "derived/wrong")
    proc = sluice.run("submit", "--manifest", j, "--run-id", "wrong-1")
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert re.search(r"stage 'plain-c-rename' input from object 'derived/renamed-src/src-1/"
                     r"[^']+\.parquet': schema mismatch: expected \[primary_key: string not null",
                     err), err
    assert "got [pk: string not null" in err, err


def test_a_jsonl_source_needs_a_declared_input_schema(third_party, tmp_path):
    sluice, pins, _ = third_party
    j = write_job(tmp_path, "jsonl-any.toml", JSONL_SOURCE,
                  [("plain-c-identity", pins["plain-c-identity"])], "derived/jsonl-any")
    proc = sluice.run("submit", "--manifest", j, "--run-id", "jsonl-any")
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert re.search(r"jsonl-any\.toml:\d+:\d+: stage 'plain-c-identity' reads schema 'any'", err)
    assert "the first stage must declare its input schema" in err


def test_an_any_output_is_fixed_by_its_first_stream(third_party, tmp_path):
    sluice, pins, _ = third_party
    j = write_job(tmp_path, "twice.toml", JSONL_SOURCE,
                  [("conversation-message-extract", PIN), ("plain-c-twice", pins["plain-c-twice"])],
                  "derived/twice")
    proc = sluice.run("submit", "--manifest", j, "--run-id", "twice-1")
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert re.search(r"transform 'plain-c-twice' \(output schema 'any'\) output stream 2 on "
                     r"object 'raw/conversations/[^']+' differs from the first stream it emitted",
                     err), err
    assert "got [pk: string not null" in err, err


def test_dedup_after_an_any_output_is_refused_before_work_starts(third_party, tmp_path):
    sluice, pins, _ = third_party
    j = write_job(tmp_path, "any-dedup.toml", JSONL_SOURCE,
                  [("conversation-message-extract", PIN),
                   ("plain-c-identity", pins["plain-c-identity"])],
                  "derived/any-dedup", dedup="data_hash")
    proc = sluice.run("submit", "--manifest", j, "--run-id", "any-dedup")
    assert proc.returncode == 1
    assert "dedup needs the stage before it to declare its output schema" in proc.stderr.decode()
    assert sluice.run("store", "ls", "derived/any-dedup/", check=True).stdout == b""


def test_a_typed_chain_with_disagreeing_arrow_schemas_is_refused(third_party, tmp_path):
    """Two artifacts that name the same schema id but declare different Arrow schemas."""
    sluice, _, outside = third_party
    other = pa.schema([f.with_nullable(True) for f in EXTRACTED])
    d = c_transform(outside / "disagree", "plain-c-disagree", "RENAME", EXTRACTED_ID, other,
                    RENAMED_ID, RENAMED)
    pin = publish(sluice, d)
    j = write_job(tmp_path, "disagree.toml", JSONL_SOURCE,
                  [("conversation-message-extract", PIN), ("plain-c-disagree", pin)],
                  "derived/disagree")
    proc = sluice.run("submit", "--manifest", j, "--run-id", "disagree")
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert re.search(r"disagree\.toml:\d+:\d+: stage 'plain-c-disagree' reads schema "
                     r"'sluice\.examples\.conversation\.ConversationMessageExtracted' as the stage "
                     r"before it declares it", err), err


def test_an_any_stage_that_emits_nothing_commits_no_rows(third_party, tmp_path):
    """No stream means no schema: the typed stage after it is not called, and no part is
    written, but the run commits."""
    sluice, pins, _ = third_party
    for run_id, stages in [
            ("nothing-1", [("conversation-message-extract", PIN),
                           ("plain-c-nothing", pins["plain-c-nothing"])]),
            ("nothing-2", [("conversation-message-extract", PIN),
                           ("plain-c-nothing", pins["plain-c-nothing"]),
                           ("plain-c-rename", pins["plain-c-rename"])])]:
        j = write_job(tmp_path, f"{run_id}.toml", JSONL_SOURCE, stages, f"derived/{run_id}")
        out = sluice.run("submit", "--manifest", j, "--run-id", run_id, check=True)
        assert "0 rows out" in out.stdout.decode()


def test_a_typed_input_without_an_arrow_schema_cannot_parse_a_source(third_party, tmp_path):
    sluice, pins, _ = third_party
    j = write_job(tmp_path, "untyped.toml", JSONL_SOURCE,
                  [("plain-c-untyped", pins["plain-c-untyped"])], "derived/untyped")
    proc = sluice.run("submit", "--manifest", j, "--run-id", "untyped")
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert re.search(r"untyped\.toml:\d+:\d+: stage 'plain-c-untyped' declares input schema "
                     r"'sluice\.examples\.conversation\.ConversationMessageExtracted', but its "
                     r"artifact carries no Arrow schema", err), err
