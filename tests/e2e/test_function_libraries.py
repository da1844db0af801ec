"""Function libraries (include/sluice/function_abi.h) end to end: `sluice function
check/test/publish`, CREATE FUNCTION LIBRARY, and the example library's functions in SQL, in one
process and across worker processes, checked against DuckDB and against each other. The library
is the real shared library the build makes (functions/), loaded by dlopen from a sealed memfd
after its BLAKE3 is checked against the pin."""

import re
from pathlib import Path

import pytest

from conftest import ROOT, Sluice, base_env
from test_sql_distributed import (LINEITEM_FILES, assert_same_rows, duckdb_rows, explain,  # noqa: F401
                                  query, tpch)


def library_path(sluice_bin, name):
    """The libraries are built beside the binary under test (build/ or build-asan/)."""
    build = Path(sluice_bin).parent
    return {"example": build / "functions" / "libsluice-example-functions.so",
            "garbage": build / "tests" / "functions" / "libtest_functions_garbage.so"}[name]


def publish(sluice, path):
    out = sluice.run("function", "publish", path, check=True).stdout.decode()
    m = re.fullmatch(r"registered function_library=(\S+) artifact_blake3=([0-9a-f]{64})\n", out)
    assert m, out
    return m.group(2)


@pytest.fixture(scope="module")
def fx(tpch, sluice_bin):
    """The TPC-H session with the example library published and created as `ex`."""
    sluice, con, data = tpch
    digest = publish(sluice, library_path(sluice_bin, "example"))
    out = sluice.run("query", f"CREATE FUNCTION LIBRARY ex FROM PIN '{digest}'",
                     check=True).stdout.decode()
    assert out == ("CREATE FUNCTION LIBRARY ex (sluice-example-functions 0.1.0: net_revenue, "
                   "weighted_avg, blake3_hex, revenue_rank)\n"), out
    return sluice, con, data, digest


def test_check_test_and_publish(sluice_bin, sluice, tmp_path):
    lib = library_path(sluice_bin, "example")
    out = sluice.run("function", "check", lib, check=True).stdout.decode()
    assert "function library sluice-example-functions 0.1.0" in out, out
    assert "aggregate weighted_avg(double, double) -> double, state struct<weighted_sum: double, " \
           "weight_sum: double>" in out, out
    out = sluice.run("function", "test", lib, check=True).stdout.decode()
    assert "ok: net_revenue on 1000 rows (333 NULL results)" in out, out
    assert re.search(r"ok: weighted_avg on 1000 rows: (\S+) whole, \1 from two merged", out), out
    first = publish(sluice, lib)
    assert first == sluice.run("hash", lib, check=True).stdout.decode().split()[0]
    stored = Path(sluice.env["SLUICE_HOME"]) / "store" / "functions" / f"{first}.so"
    assert stored.read_bytes() == lib.read_bytes()
    assert publish(sluice, lib) == first  # the same bytes, the same address

    # Not a function library: every problem is named.
    proc = sluice.run("function", "check", library_path(sluice_bin, "example").parent.parent /
                      "sluice")
    assert proc.returncode != 0
    assert "found 4 problem(s)" in proc.stderr.decode(), proc.stderr.decode()
    assert "does not export 'sluice_functions'" in proc.stderr.decode(), proc.stderr.decode()
    assert "no identity section" in proc.stderr.decode(), proc.stderr.decode()


Q1_WITH_FUNCTIONS = """
select l_returnflag, l_linestatus,
       sum(l_quantity) as sum_qty,
       sum(net_revenue(l_extendedprice, l_discount)) as sum_disc_price,
       weighted_avg(l_extendedprice, l_quantity) as avg_price_by_qty,
       count(*) as count_order
from lineitem
where l_shipdate <= date '1998-12-01' - interval '90' day
group by l_returnflag, l_linestatus
order by l_returnflag, l_linestatus"""

Q1_IN_DUCKDB = """
select l_returnflag, l_linestatus,
       sum(l_quantity),
       sum(l_extendedprice::double * (1 - l_discount::double)),
       sum(l_extendedprice::double * l_quantity::double) / sum(l_quantity::double),
       count(*)
from lineitem
where l_shipdate <= date '1998-12-01' - interval '90' day
group by l_returnflag, l_linestatus
order by l_returnflag, l_linestatus"""


def close(a, b, rel=1e-9):
    if isinstance(a, float) or isinstance(b, float):
        return abs(float(a) - float(b)) <= rel * max(abs(float(a)), abs(float(b)), 1e-300)
    return a == b


def assert_close_rows(ours, want, what):
    assert len(ours) == len(want), f"{what}: {len(ours)} rows, expected {len(want)}"
    for i, (a, b) in enumerate(zip(ours, want)):
        assert all(close(x, y) for x, y in zip(a, b)), f"{what} row {i}: {a} != {b}"


def test_q1_with_library_functions_across_4_workers(fx, tmp_path):
    sluice, con, _, digest = fx
    plan = explain(sluice, Q1_WITH_FUNCTIONS, 4)
    assert "distributed plan: 3 stages on 4 workers" in plan, plan
    assert f"stage 1 (map): 4 tasks over lineitem's {LINEITEM_FILES} files" in plan, plan
    # The partial step on the map stage, the merge on the final stage; the plan names the
    # function and its library's digest, nothing else.
    partial = next(l for l in plan.splitlines() if "PartialAggregate" in l)
    final = next(l for l in plan.splitlines() if "FinalAggregate" in l)
    assert f"ext:{digest}:weighted_avg:partial(" in partial and "[stage 1]" in partial, plan
    assert f"ext:{digest}:weighted_avg:merge(" in final and "[stage 2]" in final, plan
    distributed, _ = query(sluice, Q1_WITH_FUNCTIONS, tmp_path / "d.arrow", 4)
    local, _ = query(sluice, Q1_WITH_FUNCTIONS, tmp_path / "l.arrow", 0)
    assert len(local) == 4
    assert_close_rows(distributed, local, "Q1 with library functions, --workers 4 vs 0")
    assert_close_rows(local, duckdb_rows(con, Q1_IN_DUCKDB), "Q1 with library functions vs DuckDB")


def test_a_filter_drops_rows_before_library_functions_see_them(fx):
    """Under a GROUP BY of integer keys a WHERE may mark the rows it drops rather than drop them
    (exec/kept_rows.h), and the project above it then computes them too: never where a library
    function, in the project or in an aggregate, would see them."""
    sluice, _, _, _ = fx
    project = "sum(net_revenue(l_extendedprice, l_discount))"
    aggregate = "weighted_avg(l_extendedprice, l_quantity)"
    variants = {
        "neither": Q1_WITH_FUNCTIONS.replace(project, "sum(l_discount)").replace(
            aggregate, "avg(l_tax)"),
        "project": Q1_WITH_FUNCTIONS.replace(aggregate, "avg(l_tax)"),
        "aggregate": Q1_WITH_FUNCTIONS.replace(project, "sum(l_discount)"),
    }
    for name, sql in variants.items():
        plan = sluice.run("query", "explain verbose " + sql, check=True).stdout.decode()
        assert ("marks kept rows" in plan) == (name == "neither"), (name, plan)


@pytest.mark.parametrize("workers", [0, 2])
def test_library_functions_in_general_sql(fx, tmp_path, workers):
    """NULLs, literals, other types that convert to the declared ones, no GROUP BY, and use in
    WHERE and HAVING."""
    sluice, con, _, _ = fx
    cases = [
        ("select net_revenue(100, 0.25), net_revenue(null, 0.5), blake3_hex('abc') from lineitem "
         "limit 1",
         "select 75.0, null, '6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85'"),
        ("select weighted_avg(l_tax, l_quantity), weighted_avg(l_tax, case when l_quantity > 1000 "
         "then 1 end) from lineitem",
         "select sum(l_tax::double * l_quantity::double) / sum(l_quantity::double), null "
         "from lineitem"),
        ("select l_linenumber, count(*) from lineitem where net_revenue(l_extendedprice, l_discount)"
         " > 90000 group by 1 having weighted_avg(l_quantity, 1) > 40 order by 1",
         "select l_linenumber, count(*) from lineitem where l_extendedprice::double * "
         "(1 - l_discount::double) > 90000 group by 1 having avg(l_quantity::double) > 40 "
         "order by 1"),
    ]
    for i, (ours, theirs) in enumerate(cases):
        rows, _ = query(sluice, ours, tmp_path / f"{i}.arrow", workers)
        assert_close_rows(rows, duckdb_rows(con, theirs), ours)


@pytest.mark.parametrize("workers", [0, 2])
def test_a_library_window_function_matches_rank(fx, tmp_path, workers):
    """revenue_rank is SQL's rank() by net revenue, descending, within the window partition;
    at --workers 2 it runs in a window stage on the workers."""
    sluice, con, _, digest = fx
    ours = ("select l_orderkey, l_linenumber, revenue_rank(l_extendedprice, l_discount) over "
            "(partition by l_orderkey) as r, count(*) over (partition by l_orderkey) as n "
            "from lineitem where l_orderkey % 7 = 3 order by 1, 2")
    theirs = ("select l_orderkey, l_linenumber, rank() over (partition by l_orderkey order by "
              "l_extendedprice::double * (1 - l_discount::double) desc), count(*) over "
              "(partition by l_orderkey) from lineitem where l_orderkey % 7 = 3 order by 1, 2")
    if workers:
        plan = explain(sluice, ours, workers)
        assert "(window): 2 tasks" in plan, plan
        assert f"ext:{digest}:revenue_rank" in plan, plan
    rows, _ = query(sluice, ours, tmp_path / "w.arrow", workers)
    assert len(rows) > 1000
    assert_close_rows(rows, duckdb_rows(con, theirs), "revenue_rank vs rank()")


def test_bad_calls_are_errors_naming_the_function(fx):
    sluice, _, _, _ = fx
    for sql, message in [
        ("select net_revenue(l_quantity) from lineitem",
         "function net_revenue(double, double) of function library ex takes 2 arguments, not 1"),
        ("select net_revenue(l_comment, 1) from lineitem",
         "argument 1 is string, which does not convert to double"),
        ("select weighted_avg(weighted_avg(l_tax, 1), 1) from lineitem",
         "aggregate function calls cannot be nested"),
        ("select l_orderkey from lineitem where weighted_avg(l_tax, 1) > 0",
         "aggregate functions are not allowed here"),
        ("select weighted_avg(distinct l_tax, 1) from lineitem", "not supported"),
        ("select revenue_rank(l_tax, 1) from lineitem",
         "window function revenue_rank(double, double) of function library ex requires an OVER "
         "clause"),
        ("select net_revenue(l_tax, 1) over () from lineitem",
         "OVER on net_revenue(double, double) of function library ex, which is not a window "
         "function"),
    ]:
        proc = sluice.run("query", sql)
        assert proc.returncode != 0, sql
        assert message in proc.stderr.decode(), (sql, proc.stderr.decode())


@pytest.mark.parametrize("workers", [0, 2])
def test_a_library_error_reaches_the_user_with_the_function_name(fx, sluice_bin, workers):
    sluice, _, _, _ = fx
    digest = publish(sluice, library_path(sluice_bin, "garbage"))
    sluice.run("query", f"CREATE FUNCTION LIBRARY garbage FROM PIN '{digest}'", check=True)
    for function, message in [("refuses", "the value was not positive"),
                              ("wrong_length", "returned"), ("bad_offsets", "an invalid array")]:
        proc = sluice.run("query", "--workers", workers,
                          f"select l_orderkey, {function}(l_quantity) from lineitem")
        assert proc.returncode != 0
        err = proc.stderr.decode()
        assert f"function {function} (library garbage-functions 1, {digest})" in err, err
        assert message in err, err


def test_a_tampered_library_is_refused_before_it_is_loaded(fx, tmp_path):
    sluice, _, data, digest = fx
    # A separate home: its cache is empty, so the store's bytes are what gets verified.
    env = base_env(tmp_path / "home")
    env["SLUICE_STORE"] = f"file://{data}"
    other = Sluice(sluice.binary, env)
    stored = data / "functions" / f"{digest}.so"
    good = stored.read_bytes()
    try:
        stored.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
        proc = other.run("query", f"CREATE FUNCTION LIBRARY ex FROM PIN '{digest}'")
        assert proc.returncode != 0
        err = proc.stderr.decode()
        assert f"artifact {digest}" in err and "fails verification" in err, err
        assert "refusing to load it" in err, err
    finally:
        stored.write_bytes(good)
    # The pin of a library nobody published.
    proc = other.run("query", f"CREATE FUNCTION LIBRARY ex FROM PIN '{'0' * 64}'")
    assert proc.returncode != 0
    assert "is not in store" in proc.stderr.decode(), proc.stderr.decode()
    assert "sluice function publish" in proc.stderr.decode(), proc.stderr.decode()


def test_a_worker_killed_mid_query_is_replaced_and_loads_the_library_again(fx, tmp_path):
    """The first attempt of a map task is SIGKILLed; its retry runs in a new worker process,
    which has only the spec to find the library by, and the answer equals the in-process one."""
    sluice, _, _, _ = fx
    sql = ("select l_returnflag, weighted_avg(l_extendedprice, l_quantity), "
           "sum(net_revenue(l_extendedprice, l_discount)) from lineitem group by 1 order by 1")
    killed, err = query(sluice, sql, tmp_path / "k.arrow", 2,
                        env={"SLUICE_FAILPOINT": "kill:s1p0:1"})
    assert "s1p0" in err and "attempt" in err, err
    local, _ = query(sluice, sql, tmp_path / "l.arrow", 0)
    assert_close_rows(killed, local, "a killed map task, retried, vs in-process")


def test_a_damaged_partial_state_file_breaks_the_query_naming_the_file(fx, tmp_path):
    """The map tasks' shuffle files hold weighted_avg's partial states; one damaged between the
    partial and the final step is caught by its digest, so the final step really read them."""
    sluice, _, _, _ = fx
    sql = "select l_returnflag, weighted_avg(l_extendedprice, l_quantity) from lineitem group by 1"
    proc = sluice.run("query", "--workers", 2, sql,
                      env={"SLUICE_FAILPOINT": "corrupt-after-write:s1p0:*"})
    assert proc.returncode != 0
    err = proc.stderr.decode()
    assert re.search(r"shuffle file '_sluice/shuffle/[^']*/s1p0-\d+/part-\d\.arrow'", err), err
    assert "damaged or replaced" in err, err


def test_a_new_library_scaffold_builds_tests_publishes_and_runs(sluice, tmp_path):
    out = sluice.run("function", "new", "my-functions", "--dir", tmp_path, check=True)
    lib = tmp_path / "my-functions"
    assert out.stdout.decode().startswith(f"created {lib}\n"), out.stdout.decode()
    assert (lib / "CMakeLists.txt").exists() and (lib / "src" / "functions.cpp").exists()
    # A directory is built (standalone, against this checkout), then tested.
    out = sluice.run("function", "test", lib, check=True).stdout.decode()
    assert out == "ok: scaled on 1000 rows (333 NULL results)\n", out
    digest = publish(sluice, lib)
    assert digest == publish(sluice, lib / "build" / "libmy-functions.so")
    sluice.run("query", f"CREATE FUNCTION LIBRARY mine FROM PIN '{digest}'", check=True)
    out = sluice.run("query", "select scaled(2, 3.5) as s, scaled(null, 1) as n", check=True)
    assert out.stdout.decode() == '"s","n"\n7,\n', out.stdout.decode()

    for name, message in [("My_Functions", "invalid function library name"),
                          ("my-functions", "already exists; refusing to overwrite it")]:
        proc = sluice.run("function", "new", name, "--dir", tmp_path)
        assert proc.returncode != 0
        assert message in proc.stderr.decode(), proc.stderr.decode()


@pytest.mark.parametrize("workers", [0, 2])
def test_a_table_provider_reads_gateway_objects_like_duckdb(fx, workers, tmp_path):
    """gateway_objects: one partition per JSONL object under the table's location, parsed with
    the example transform's input schema. At --workers 2 the map tasks split the partitions and
    rebuild the scan from the plan's description alone."""
    sluice, con, data, digest = fx
    sluice.run("example-data", "conversations", "--objects", 9, "--requests-per-object", 40,
               "--prefix", "gw/", check=True)
    out = sluice.run("query", "CREATE EXTERNAL TABLE gateway STORED AS PROVIDER ex.gateway_objects "
                              "LOCATION 'gw/'", check=True).stdout.decode()
    assert out == "CREATE EXTERNAL TABLE gateway (9 partitions, 6 columns)\n", out
    ours = ("select model, count(*), count(distinct conversation_id), min(request_id), "
            "max(received_at) from gateway group by model order by model")
    theirs = ("select model, count(*), count(distinct conversation_id), min(request_id), "
              f"max(received_at::timestamptz) from read_json('{data}/gw/*.jsonl', "
              "format='newline_delimited') group by model order by model")
    if workers:
        plan = explain(sluice, ours, workers)
        assert "stage 1 (map): 2 tasks over gateway's 9 files (split)" in plan, plan
    rows, _ = query(sluice, ours, tmp_path / "g.arrow", workers)
    want = duckdb_rows(con, theirs)
    assert len(rows) == len(want) == 3
    for a, b in zip(rows, want):
        assert a[:4] == b[:4], (a, b)
        assert str(a[4]).replace("+00:00", "") == str(b[4].replace(tzinfo=None)), (a, b)


def test_table_provider_errors_name_the_table_and_library(fx):
    sluice, _, _, _ = fx
    for sql, message in [
        ("CREATE EXTERNAL TABLE t STORED AS PROVIDER nope.gateway_objects LOCATION 'gw/'",
         "function library nope does not exist"),
        ("CREATE EXTERNAL TABLE t STORED AS PROVIDER ex.nothing LOCATION 'gw/'",
         "table provider nothing (library sluice-example-functions 0.1.0"),
        ("CREATE EXTERNAL TABLE t STORED AS PROVIDER ex.gateway_objects LOCATION 'empty/'",
         "no partitions for options 'empty/'"),
        ("CREATE EXTERNAL TABLE t STORED AS PROVIDER gateway_objects LOCATION 'gw/'",
         "syntax error in CREATE EXTERNAL TABLE"),
    ]:
        proc = sluice.run("query", sql)
        assert proc.returncode != 0, sql
        assert message in proc.stderr.decode(), (sql, proc.stderr.decode())


def test_a_signed_library_is_verified_when_it_is_created(sluice_bin, sluice):
    sluice.run("auth", "keygen", check=True)
    lib = library_path(sluice_bin, "example")
    proc = sluice.run("function", "publish", lib, check=True)
    assert "signed by ed25519:" in proc.stderr.decode(), proc.stderr.decode()
    digest = re.search(r"artifact_blake3=([0-9a-f]{64})", proc.stdout.decode()).group(1)
    out = sluice.run("query", f"CREATE FUNCTION LIBRARY ex FROM PIN '{digest}'",
                     check=True).stdout.decode()
    assert "; signed by ed25519:" in out, out
    # The registry's signature altered: refused, naming the library and the publisher.
    import sqlite3
    db = sqlite3.connect(Path(sluice.env["SLUICE_HOME"]) / "registry.db")
    db.execute("update function_libraries set signature = zeroblob(64)")
    db.commit()
    db.close()
    proc = sluice.run("query", f"CREATE FUNCTION LIBRARY ex FROM PIN '{digest}'")
    assert proc.returncode != 0
    err = proc.stderr.decode()
    assert f"signature of library {digest} by ed25519:" in err and "does not verify" in err, err
