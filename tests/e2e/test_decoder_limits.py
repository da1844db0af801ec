"""Hostile plan bytes and pathological SQL end in an error report, never a signal: nesting that
overflowed the stack in nlohmann's CBOR decoder and in libpg_query's JSON output is refused."""

import json
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import base_env

MAGIC = b"SLUICE-PLAN/2\n"


def run_worker(sluice_bin, tmp_path, body):
    env = base_env(tmp_path / "home")
    proc = subprocess.run([str(sluice_bin), "worker"], input=MAGIC + body, capture_output=True,
                          env=env, timeout=120)
    assert proc.returncode >= 0, f"worker died of signal {-proc.returncode}"
    report = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    assert report["status"] == "error"
    return report["error"]


@pytest.mark.parametrize("body, message", [
    (b"\x81" * 200000 + b"\x00", "plan: nested deeper than 2064 levels (at byte 2064)"),
    (b"\x9f" * 200000 + b"\x00" + b"\xff" * 200000,
     "plan: nested deeper than 2064 levels (at byte 2064)"),
    (b"\x9b" + b"\xff" * 8 + b"\x00",
     "an array at byte 0 declares 18446744073709551615 items, but 1 bytes remain"),
    (b"\x5b" + b"\xff" * 8, "a string at byte 0 declares 18446744073709551615 bytes, but 0 remain"),
])
def test_worker_reports_hostile_plan_bytes(sluice_bin, tmp_path, body, message):
    assert message in run_worker(sluice_bin, tmp_path, body)


def query(sluice, sql):
    # Through stdin: one argument may not exceed 128 KiB on Linux.
    proc = sluice.run("query", "-", input=sql.encode())
    assert proc.returncode >= 0, f"sluice query died of signal {-proc.returncode}"
    return proc


NESTING = "expression nesting exceeds 256 levels"


@pytest.mark.parametrize("sql, message", [
    ("select 1" + "+1" * 29999, NESTING + " (line 1, column 8)"),
    # Just under 1 MiB: libpg_query alone needs ~65 MB of stack for it.
    ("select 1" + "+1" * 524000, NESTING + " (line 1, column 8)"),
    ("select 1" + "+1" * 999999,
     "the query is 2000006 bytes; sluice parses at most 1048576 (1 MiB)"),
    ("select " + "(" * 100000 + "1" + ")" * 100000, 'memory exhausted at or near "("'),
    ("select " + "abs(" * 1000 + "1" + ")" * 1000, NESTING),
    ("select " + "not " * 5000 + "true", NESTING),
    ("select * from " + "(select * from " * 1000 + "nation" + ") t" * 1000, NESTING),
    ("select " + "(select " * 1000 + "1" + ")" * 1000, NESTING),
    ("create external table t stored as parquet location '" + "a" * 500000 + "'",
     "File name too long"),
])
def test_pathological_sql_is_an_error(sluice, sql, message):
    proc = query(sluice, sql)
    assert proc.returncode == 1
    assert message in proc.stderr.decode(errors="replace")


def test_deep_but_accepted_query_runs(sluice, tmp_path):
    pq.write_table(pa.table({"k": [1]}), tmp_path / "one.parquet")
    sluice.run("query", f"CREATE EXTERNAL TABLE one STORED AS PARQUET LOCATION "
                        f"'{tmp_path}/one.parquet'", check=True)
    # 250 levels are within the limit: the sum is computed.
    proc = query(sluice, "select k" + "+k" * 249 + " as n from one")
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().split() == ['"n"', "250"]


def test_a_worker_refuses_a_task_from_a_driver_it_cannot_match(sluice_bin, tmp_path):
    """Worker parity: the task carries the driver's engine version and result-changing settings;
    a worker that differs refuses it naming every difference, before it runs anything."""
    import cbor2

    version = subprocess.run([str(sluice_bin), "--version"], capture_output=True,
                             check=True).stdout.decode().splitlines()
    engine = version[0]  # "sluice X.Y.Z"
    arrow_version = version[1].split()[1]
    parity = {"engine": engine, "arrow": arrow_version, "time_zone": "UTC",
              "null_order": "postgresql", "decimal_rules": "arrow-decimal128",
              "table_providers": "directory:parquet,ipc,jsonl"}

    def task(parity):
        return cbor2.dumps({"run_id": "r", "stage_id": 0, "partition": 0, "attempt": 1,
                            "session": {"store_url": f"file://{tmp_path}/store",
                                        "cache_dir": f"{tmp_path}/cache", "parity": parity},
                            "plan": {"kind": "shuffle_write", "keys": [], "partitions": 1,
                                     "folder": "_sluice/shuffle/r/s0", "one_row_per_key": False,
                                     "input": {"kind": "scan_objects", "format": "ipc",
                                               "keys": [], "first_object_index": 0,
                                               "schema_id": "", "skip_bad_records": False,
                                               "schema": pa.schema([("k", pa.utf8())])
                                               .serialize().to_pybytes()}}})

    other = dict(parity, engine="sluice 0.0.0-other", null_order="nulls_last")
    err = run_worker(sluice_bin, tmp_path, task(other))
    assert "session spec: this worker cannot match the driver" in err, err
    assert f"engine: the driver has 'sluice 0.0.0-other', this worker has '{engine}'" in err, err
    assert "null_order: the driver has 'nulls_last', this worker has 'postgresql'" in err, err
    # The same task with this worker's own values runs (it reads no object and writes one empty
    # shuffle file).
    env = base_env(tmp_path / "home")
    proc = subprocess.run([str(sluice_bin), "worker"], input=MAGIC + task(parity),
                          capture_output=True, env=env, timeout=120)
    report = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    assert report["status"] == "ok", report


def test_a_fragment_without_a_source_is_refused(sluice_bin, tmp_path):
    import cbor2

    body = cbor2.dumps({"run_id": "r", "stage_id": 0, "partition": 0, "attempt": 1,
                        "session": {"store_url": f"file://{tmp_path}/store",
                                    "cache_dir": f"{tmp_path}/cache", "parity": {}},
                        "plan": {"kind": "dedup", "key": "k"}})
    assert "plan: missing field 'input'" in run_worker(sluice_bin, tmp_path, body)


def refused_table_error(sluice, tmp_path, name, data, workers, columns):
    """The error of `select count(*), <columns> from <name>`, a table of one file holding `data`,
    which must fail and name the table and the file."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "part-0.parquet").write_bytes(bytes(data))
    sluice.run("query", f"CREATE EXTERNAL TABLE {name} STORED AS PARQUET LOCATION '{folder}'",
               check=True)
    proc = sluice.run("query", *workers, f"select count(*), {columns} from {name}")
    assert proc.returncode == 1, proc.stdout.decode()
    err = proc.stderr.decode()
    assert f"table '{name}', file '{folder}/part-0.parquet'" in err, err
    return err


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_a_corrupt_parquet_page_names_its_table_and_file(sluice, tmp_path, workers):
    """A page whose compressed bytes are damaged: Arrow's reader says only "Unexpected end of
    stream"; the error names the table and the file, in-process and from a worker's task."""
    n = 200000
    table = pa.table({"k": pa.array(range(n)), "s": [str(i * 7919) for i in range(n)]})
    good = tmp_path / "good.parquet"
    pq.write_table(table, good, compression="snappy")
    data = bytearray(good.read_bytes())
    middle = len(data) * 3 // 10  # inside a column chunk's pages, far from the footer
    for i in range(middle, middle + 64):
        data[i] ^= 0x5A
    refused_table_error(sluice, tmp_path, "damaged", data, workers, "sum(k), max(s)")


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_a_corrupt_snappy_stream_is_refused_by_libsnappy(sluice, tmp_path, workers):
    """Snappy pages are decompressed by Debian's libsnappy (src/storage/snappy_codec.h), in the
    driver and in a worker: a page whose snappy stream turns to 0xff bytes after its length is
    refused with that codec's message, naming the table and the file."""
    n = 200000
    table = pa.table({"k": pa.array([(i * 7919) % 100003 for i in range(n)])})
    good = tmp_path / "good.parquet"
    pq.write_table(table, good, compression="snappy", use_dictionary=False,
                   data_page_size=64 << 20)
    chunk = pq.ParquetFile(good).metadata.row_group(0).column(0)
    start = chunk.data_page_offset
    data = bytearray(good.read_bytes())
    # Past the first page's header and its stream's length: the stream's next tag reads 0xff, a
    # copy from 4 GiB back, which no stream may ask for.
    data[start + 256:start + chunk.total_compressed_size] = \
        b"\xff" * (chunk.total_compressed_size - 256)
    err = refused_table_error(sluice, tmp_path, "snappy", data, workers, "sum(k)")
    assert "corrupt snappy data" in err, err


def damage(data, at, n=8):
    """`data` with `n` bytes from `at` flipped."""
    out = bytearray(data)
    for i in range(at, at + n):
        out[i] ^= 0x5A
    return bytes(out)


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_a_damaged_page_with_a_crc_is_an_error_not_wrong_values(sluice, tmp_path, workers):
    """An uncompressed page has nothing that fails to decode: without its CRC checked, damaged
    values read as values (a sum came back wrong). A page that carries a CRC is checked."""
    n = 200000
    table = pa.table({"k": pa.array(range(n)), "s": [str(i * 7919) for i in range(n)]})
    good = tmp_path / "good.parquet"
    pq.write_table(table, good, compression="none", use_dictionary=False,
                   write_page_checksum=True)
    data = good.read_bytes()
    err = refused_table_error(sluice, tmp_path, "crc", damage(data, len(data) * 3 // 10), workers,
                              "sum(k), max(s)")
    assert "CRC checksum verification failed" in err, err


def test_query_output_by_extension_carries_page_crcs(sluice, tmp_path):
    """`-o out.parquet` writes Parquet (no --format needed), with a CRC on every page, which
    sluice checks when it reads the file back as a table."""
    n = 100000
    src = tmp_path / "src"
    src.mkdir()
    pq.write_table(pa.table({"k": pa.array(range(n))}), src / "part-0.parquet")
    sluice.run("query", f"CREATE EXTERNAL TABLE src STORED AS PARQUET LOCATION '{src}'",
               check=True)
    out = tmp_path / "out.parquet"
    sluice.run("query", "select k, k * 2 as d from src", "-o", str(out), check=True)
    assert pq.read_table(out).num_rows == n
    # The other extensions name their formats too; an unknown one is CSV, as before.
    few = "select k from src where k < 3 order by k"
    sluice.run("query", few, "-o", str(tmp_path / "out.JSON"), check=True)
    assert [json.loads(line) for line in (tmp_path / "out.JSON").read_text().splitlines()] == [
        {"k": 0}, {"k": 1}, {"k": 2}]
    # .arrow is an IPC file, which sluice reads back as a table; .arrows the IPC stream.
    ipc = tmp_path / "ipc"
    ipc.mkdir()
    sluice.run("query", few, "-o", str(ipc / "out.arrow"), check=True)
    with pa.ipc.open_file(ipc / "out.arrow") as reader:
        assert reader.read_all().column("k").to_pylist() == [0, 1, 2]
    sluice.run("query", f"CREATE EXTERNAL TABLE ipc STORED AS IPC LOCATION '{ipc}'", check=True)
    back = sluice.run("query", "select sum(k) from ipc", "--format", "csv", check=True)
    assert back.stdout.decode().splitlines()[1] == "3"
    sluice.run("query", few, "-o", str(tmp_path / "out.arrows"), check=True)
    with pa.ipc.open_stream((tmp_path / "out.arrows").read_bytes()) as reader:
        assert reader.read_all().column("k").to_pylist() == [0, 1, 2]
    sluice.run("query", few, "-o", str(tmp_path / "out.txt"), check=True)
    assert (tmp_path / "out.txt").read_text().splitlines() == ['"k"', "0", "1", "2"]
    folder = tmp_path / "back"
    folder.mkdir()
    data = out.read_bytes()
    (folder / "part-0.parquet").write_bytes(damage(data, len(data) // 4))
    sluice.run("query", f"CREATE EXTERNAL TABLE back STORED AS PARQUET LOCATION '{folder}'",
               check=True)
    proc = sluice.run("query", "select sum(k), sum(d) from back")
    assert proc.returncode == 1, proc.stdout.decode()
    assert "CRC checksum verification failed" in proc.stderr.decode(), proc.stderr.decode()
