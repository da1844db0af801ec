"""`sluice query` on TPC-H SF 0.1 (tpchgen-cli Parquet), checked against DuckDB on the same files.
Every query either matches DuckDB (floats to a relative 1e-9, row order where the query orders)
or fails with a clear "not supported: ..." error; a wrong answer fails the test."""

import decimal
import json
import math
import re
import subprocess
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from conftest import ROOT, VENV_BIN, Sluice, base_env

QUERIES = ROOT / "tests" / "tpch"
TABLES = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"]
# Must pass; every other query must pass or say "not supported". All 22 pass today.
REQUIRED = set(range(1, 23))


@pytest.fixture(scope="module")
def tpch(sluice_bin, tmp_path_factory):
    root = tmp_path_factory.mktemp("tpch")
    data = root / "data"
    subprocess.run([str(VENV_BIN / "tpchgen-cli"), "parquet", "-s", "0.1", "--output-dir",
                    str(data)], check=True, capture_output=True)
    env = base_env(root / "home")
    env["SLUICE_STORE"] = f"file://{data}"
    sluice = Sluice(sluice_bin, env)
    for t in TABLES:
        out = sluice.run("query", f"CREATE EXTERNAL TABLE {t} STORED AS PARQUET LOCATION "
                                  f"'{t}.parquet'", check=True).stdout.decode()
        assert out.startswith(f"CREATE EXTERNAL TABLE {t} (1 files")
    con = duckdb.connect()
    for t in TABLES:
        con.execute(f"create view {t} as select * from read_parquet('{data}/{t}.parquet')")
    return sluice, con, root


def normalize(v):
    if isinstance(v, decimal.Decimal):
        return float(v)
    return v


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        if math.isnan(float(a)) or math.isnan(float(b)):
            return math.isnan(float(a)) and math.isnan(float(b))
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def run_sluice(sluice, sql, out):
    return sluice.run("query", "--format", "arrow", "-o", out, sql)


@pytest.mark.parametrize("n", range(1, 23))
def test_tpch_query_matches_duckdb_or_is_not_supported(tpch, n, tmp_path):
    sluice, con, _ = tpch
    sql = (QUERIES / f"q{n:02d}.sql").read_text()
    out = tmp_path / "result.arrow"
    proc = run_sluice(sluice, sql, out)
    if proc.returncode != 0:
        err = proc.stderr.decode()
        assert n not in REQUIRED, f"Q{n} must pass: {err}"
        assert "not supported: " in err, f"Q{n} failed without saying what is unsupported: {err}"
        pytest.skip(f"Q{n}: {err.strip().splitlines()[-1][:200]}")
    with pa.ipc.open_stream(out) as reader:
        ours = reader.read_all()
    expected = con.execute(sql).fetchall()
    rows = [tuple(normalize(v) for v in r) for r in zip(*[c.to_pylist() for c in ours.columns])]
    want = [tuple(normalize(v) for v in r) for r in expected]
    assert len(rows) == len(want), f"Q{n}: {len(rows)} rows, DuckDB {len(want)}"
    if not re.search(r"\border\s+by\b", sql, re.I):
        rows, want = sorted(rows, key=repr), sorted(want, key=repr)
    for i, (a, b) in enumerate(zip(rows, want)):
        assert len(a) == len(b)
        assert all(same(x, y) for x, y in zip(a, b)), f"Q{n} row {i}: {a} != {b}"


@pytest.mark.parametrize("sql, message", [
    ("select l_shipdat from lineitem",
     'column "l_shipdat" does not exist (line 1, column 8); did you mean "l_shipdate"?'),
    ("select x from nosuch", 'relation "nosuch" does not exist'),
    ("selec 1", 'syntax error at or near "selec" (line 1, column 1)'),
    ("select l_comment + 1 from lineitem", "type error: "),
    ("select l_comment + 1 from lineitem", "(line 1, column 18)"),
    ("select l_orderkey from lineitem where l_quantity", "argument of WHERE must be type boolean"),
    ("select l_orderkey, count(*) from lineitem group by l_linestatus",
     'column "l_orderkey" must appear in the GROUP BY clause'),
    ("select * from lineitem, orders", "not supported: a cross join of about"),
    ("select * from nation join region using (n_regionkey)",
     "column \"n_regionkey\" specified in USING clause does not exist in right table"),
    ("with recursive t as (select 1) select * from t", "not supported: WITH RECURSIVE"),
    ("select n_name from nation n1, nation n2 where n1.n_nationkey = n2.n_nationkey",
     'column reference "n_name" is ambiguous (line 1, column 8)'),
    ("select n_name from nation, nation", 'table name "nation" specified more than once'),
    ("select n_name from nation where n_nationkey = (select r_regionkey from region)",
     "more than one row (5) returned by a subquery used as an expression (line 1, column 47)"),
    ("select n_name from nation where n_nationkey = (select r_regionkey, r_name from region "
     "where r_regionkey = 1)", "subquery must return only one column"),
    ("select n_name from nation where n_nationkey = (select r_regionkey from region "
     "where r_name = n_name)",
     "not supported: a correlated scalar subquery that is not one ungrouped aggregate"),
    ("select count(*) from nation n where n_nationkey not in (select case when r_regionkey < 2 "
     "then null else r_regionkey end from region r where r.r_regionkey = n.n_regionkey)",
     "not supported: a correlated NOT IN over a column that may be NULL (write it as NOT EXISTS)"),
    ("select count(*) from nation where n_regionkey in (select r_regionkey from region where "
     "exists (select * from nation n2 where n2.n_nationkey = nation.n_nationkey))",
     "not supported: a reference to a column two or more query levels out"),
    ("select n_regionkey, (select max(r_name) from region where r_regionkey = n_regionkey) "
     "from nation group by n_regionkey", "not supported: a correlated subquery after aggregation"),
    ("select n_name from nation where n_regionkey in "
     "(select r_regionkey from region where r_regionkey < n_nationkey)",
     "not supported: a correlated IN subquery whose conditions on the outer query are not all "
     "`column = outer column` (write it as EXISTS)"),
    ("select n_name from nation where n_regionkey not in "
     "(select max(r_regionkey) from region where r_regionkey = n_nationkey)",
     "not supported: a correlated NOT IN over an aggregate (write it as NOT EXISTS)"),
    ("select count(*) from customer where c_nationkey in "
     "(select count(*) from orders where o_custkey = c_custkey)",
     "not supported: a correlated IN over an ungrouped aggregate other than min, max, sum or avg"),
    ("select c_custkey from customer left join orders on c_custkey = o_custkey "
     "and o_totalprice > (select avg(o_totalprice) from orders)",
     "not supported: a scalar subquery in the ON clause of an outer join"),
    ("select n_name from nation where n_nationkey < "
     "(select max(r_regionkey) from region where r_regionkey < n_regionkey)",
     "not supported: a correlated condition other than column = outer column in a scalar "
     "subquery (line 1, column 55)"),
    ("select n_name from nation where exists (select * from region where r_regionkey > "
     "n_regionkey)",
     "not supported: EXISTS without an equality between a subquery column and an outer column"),
    ("with t as (select * from t) select * from t",
     "not supported: a CTE that refers to itself (WITH RECURSIVE)"),
    ("select cast(n_nationkey as numeric(50, 2)) from nation",
     "NUMERIC(50, 2) is not a valid precision and scale"),
    ("select n_name from nation where n_nationkey = (select max(r_regionkey), 1 from region)",
     "subquery must return only one column (line 1, column 47)"),
    ("select n_name from nation where n_regionkey in (select r_regionkey, r_name from region)",
     "subquery has too many columns"),
    ("select n_name from nation where n_name like 'A%' or exists "
     "(select n_regionkey from nation group by n_regionkey)",
     "not supported: EXISTS or IN over a grouped, aggregated, limited or combined subquery "
     "inside an expression"),
    ("select r_name, (select sum(distinct n_regionkey) from nation "
     "where n_regionkey = r_regionkey) from region",
     "not supported: DISTINCT aggregates over several expressions, or sum or avg of DISTINCT "
     "values, in a correlated subquery (line 1, column 24)"),
    ("select count(distinct n_name), stddev(distinct n_regionkey) from nation",
     "not supported: stddev(DISTINCT ...) (line 1, column 32)"),
    ("select distinct n_name from nation order by n_regionkey",
     "for SELECT DISTINCT, ORDER BY expressions must appear in select list"),
    ("select n_name from nation limit -1", "LIMIT must not be negative (line 1, column 33)"),
    ("select count(*) from nation where n_nationkey = 'abc'",
     'invalid input syntax for type bigint: "abc" (line 1, column 47)'),
    ("select split_part(n_name, ',', 0) from nation", "field position must not be zero"),
    ("select n_name from nation where n_regionkey in (select r_regionkey from region "
     "where r_name = n_name limit 1)", "not supported: LIMIT/OFFSET in a correlated subquery"),
    ("select n_name from nation where n_nationkey > date '2020-02-30'",
     'date/time field value out of range: "2020-02-30"'),
    ("select sum(sum(n_nationkey)) from nation", "aggregate function calls cannot be nested"),
    # what is not supported says so, before anything it reads is bound
    ("select n_name from nation where row_number() over () > 1",
     "window functions are only allowed in the select list (line 1, column 33)"),
    ("select sum(rank() over ()) from nation",
     "aggregate function calls cannot contain window function calls"),
    ("select ntile(0) over () from nation", "argument of ntile must be greater than zero"),
    ("select lag(n_name) from nation",
     "window function lag requires an OVER clause (line 1, column 8)"),
    ("select sum(n_name) over () from nation", "function sum(string) does not exist"),
    ("select count(*) over (order by n_nationkey range between 1 preceding and current row) "
     "from nation", "not supported: RANGE with an offset in a window frame (ROWS is)"),
    ("select string_agg(n_name, ',') over () from nation",
     "not supported: window function string_agg()"),
    ("select rank() over w from nation", 'window "w" does not exist (line 1, column 20)'),
    ("select n_regionkey, grouping(n_name) from nation group by rollup(n_regionkey)",
     "arguments to GROUPING must be grouping expressions of the associated query level"),
    ("select sum(n_nationkey) over (rows between current row and 1 preceding) from nation",
     "frame starting from current row cannot have preceding rows"),
    ("select o_custkey, string_agg(o_orderstatus, ',' order by o_orderdate) from orders "
     "group by o_custkey",
     "not supported: string_agg(... ORDER BY) on another expression than its value "
     "(line 1, column 58)"),
    ("select string_agg(o_orderkey, ',') from orders",
     "function string_agg(int64, text) does not exist; cast the value to text (line 1, column 19)"),
    ("select n_nationkey % 0 from nation", "divide by zero"),
    ("select cast(12345 as decimal(3,0))",
     "decimal value 12345 does not fit in decimal128(3, 0) (line 1, column 8)"),
    ("select 1.5 / (n_nationkey - n_nationkey) from nation", "divide by zero"),
    ("select *", "SELECT * with no tables specified is not valid (line 1, column 8)"),
    ("select count(*) from orders where o_orderdate = '1995-13-01'",
     'invalid input syntax for type date: "1995-13-01" (line 1, column 47)'),
    ("select c_acctbal % 2 from customer", "not supported: % on decimal128(15, 2)"),
    ("select round(n_name) from nation", "function round(string) does not exist"),
    ("select n_name from nation order by -1", "ORDER BY position -1 is not in select list"),
    ("insert into lineitem values (1)", "not supported: statement InsertStmt"),
    ("select n_name from nation union select n_nationkey from nation",
     "UNION types string and int64 cannot be matched (column 1, \"n_name\")"),
    ("select n_name, n_regionkey from nation union select r_name from region",
     "each UNION query must have the same number of columns"),
    ("select n_name from nation union select r_name from region order by length(n_name)",
     "ORDER BY on a UNION, INTERSECT or EXCEPT result must name one of its columns"),
    ("select n_name from nation where exists (select n_name from nation union select r_name "
     "from region)", "not supported: UNION, INTERSECT or EXCEPT in an EXISTS or scalar subquery"),
    ("select n_name from nation where n_regionkey in (select r_regionkey from region where "
     "r_name = n_name union select 1)", "not supported: a correlated reference inside UNION"),
])
def test_bad_queries_get_clear_errors(tpch, sql, message):
    sluice, _, _ = tpch
    proc = sluice.run("query", sql)
    assert proc.returncode == 1
    assert message in proc.stderr.decode(), proc.stderr.decode()


def test_output_formats_and_explain(tpch, tmp_path):
    sluice, _, _ = tpch
    sql = "select n_name, n_nationkey from nation where n_nationkey < 3 order by n_nationkey"
    csv = sluice.run("query", "--format", "csv", sql, check=True).stdout.decode()
    assert csv.splitlines()[0] == '"n_name","n_nationkey"'
    assert len(csv.splitlines()) == 4
    json_lines = sluice.run("query", "--format", "json", sql, check=True).stdout.decode().splitlines()
    assert json_lines[0] == '{"n_name":"ALGERIA","n_nationkey":0}'
    # Every line is strict JSON whatever the types: JSON has no infinities or NaN, so those are
    # PostgreSQL's to_json strings; numbers of each width stay numbers, decimals stay exact text.
    typed = ("select cast('Infinity' as double) i, -cast('Infinity' as double) m, "
             "cast('NaN' as double) n, 0.1::double f, cast(n_nationkey as smallint) s, "
             "nullif(n_nationkey, 0) k, 1.50 d, date '2020-01-01' + n_nationkey dt, "
             "n_nationkey = 0 b, E'\"x\\n' t from nation where n_nationkey < 2 order by s")
    lines = sluice.run("query", "--format", "json", typed, check=True).stdout.decode().splitlines()

    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    rows = [json.loads(line, parse_constant=refuse) for line in lines]
    assert rows == [
        {"i": "Infinity", "m": "-Infinity", "n": "NaN", "f": 0.1, "s": 0, "k": None, "d": "1.50",
         "dt": "2020-01-01", "b": True, "t": '"x\n'},
        {"i": "Infinity", "m": "-Infinity", "n": "NaN", "f": 0.1, "s": 1, "k": 1, "d": "1.50",
         "dt": "2020-01-02", "b": False, "t": '"x\n'},
    ]
    # A decimal of more places than digits is written out, as PostgreSQL writes it, not as 1E-9.
    small = ("select cast(0 as decimal(20, 9)) z, cast(0.000000001 as decimal(20, 9)) e, "
             "cast(-0.0000001 as decimal(10, 7)) n")
    out = sluice.run("query", "--format", "json", small, check=True).stdout.decode()
    assert json.loads(out) == {"z": "0.000000000", "e": "0.000000001", "n": "-0.0000001"}, out
    out = sluice.run("query", "--format", "table", small, check=True).stdout.decode()
    assert "0.000000000 | 0.000000001 | -0.0000001" in out, out
    # CSV too, beside values past 64 bits and of each other kind, which read as Arrow's writer
    # writes them (strings quoted with quotes doubled, NULL empty).
    wide = (small + ", cast(-12345678901234567890.5 as decimal(38, 1)) w, "
            "cast(null as decimal(5, 2)) u, 'a\"b,c' q, 2.5e0 f, date '2020-01-02' dt, true b")
    out = sluice.run("query", "--format", "csv", wide, check=True).stdout.decode()
    assert out.splitlines() == [
        '"z","e","n","w","u","q","f","dt","b"',
        '0.000000000,0.000000001,-0.0000001,-12345678901234567890.5,,"a""b,c",2.5,2020-01-02,true',
    ], out
    # Two columns of one name are both written, as PostgreSQL's row_to_json writes them.
    dup = sluice.run("query", "--format", "json", "select 1 as a, 2 as a, n_name from nation "
                     "where n_nationkey = 0", check=True).stdout.decode()
    assert json.loads(dup, object_pairs_hook=list) == [("a", 1), ("a", 2), ("n_name", "ALGERIA")]
    table = sluice.run("query", "--format", "table", sql, check=True).stdout.decode()
    assert "(3 rows)" in table
    # A value's newlines and tabs cannot break the table's lines; widths count characters.
    multiline = ("select n_nationkey, E'\u00e9\\n\\tx' s from nation where n_nationkey < 2 "
                 "order by 1")
    lines = sluice.run("query", "--format", "table", multiline, check=True).stdout.decode()
    assert lines.splitlines() == [" n_nationkey | s     ", "-------------+-------",
                                  " 0           | \u00e9\\n\\tx", " 1           | \u00e9\\n\\tx",
                                  "(2 rows)"], lines
    pq_out = tmp_path / "n.parquet"
    sluice.run("query", "--format", "parquet", "-o", pq_out, sql, check=True)
    import pyarrow.parquet as pq
    assert pq.read_table(pq_out).num_rows == 3
    # Written under a temporary name and renamed: nothing else is left beside it, and a query
    # that fails leaves no file at all.
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".sluice-tmp-")]
    failed = tmp_path / "failed.parquet"
    proc = sluice.run("query", "--format", "parquet", "-o", failed, "select 1 / 0 from nation")
    assert proc.returncode == 1 and not failed.exists()
    # Rows are written as they are computed; a query that fails half-way through its rows (the
    # key 300001 is in the middle of lineitem) still leaves no file, and says why.
    midway = "select l_orderkey / (l_orderkey - 300001) as q from lineitem"
    for fmt in ["parquet", "arrow"]:
        failed = tmp_path / f"midway.{fmt}"
        proc = sluice.run("query", "--format", fmt, "-o", failed, midway)
        assert proc.returncode == 1 and not failed.exists(), proc.stderr.decode()
        assert "divide by zero" in proc.stderr.decode()
    proc = sluice.run("query", "--format", "csv", midway)
    assert proc.returncode == 1 and "divide by zero" in proc.stderr.decode()
    # --output takes every format: the text ones too are written whole or not at all.
    for fmt, want in [("csv", csv), ("json", "\n".join(json_lines) + "\n"), ("table", table)]:
        written = tmp_path / f"out.{fmt}"
        proc = sluice.run("query", "--format", fmt, "-o", written, sql, check=True)
        assert proc.stdout == b"" and written.read_text() == want, (fmt, proc.stdout)
        failed = tmp_path / f"midway.{fmt}"
        proc = sluice.run("query", "--format", fmt, "-o", failed, midway)
        assert proc.returncode == 1 and not failed.exists() and proc.stdout == b"", fmt
        assert "divide by zero" in proc.stderr.decode()
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".sluice-tmp-")]
    # No --format with --output: CSV, as for a pipe.
    sluice.run("query", "-o", tmp_path / "plain", sql, check=True)
    assert (tmp_path / "plain").read_text() == csv
    # No rows: a header, a table with its column names, no JSON lines, files with the schema.
    none = "select n_name, n_nationkey from nation where n_nationkey > 100"
    assert sluice.run("query", "--format", "csv", none, check=True).stdout.decode() == \
        '"n_name","n_nationkey"\n'
    assert "(0 rows)" in sluice.run("query", "--format", "table", none, check=True).stdout.decode()
    assert sluice.run("query", "--format", "json", none, check=True).stdout == b""
    sluice.run("query", "--format", "arrow", "-o", tmp_path / "none.arrow", none, check=True)
    with pa.ipc.open_stream(tmp_path / "none.arrow") as reader:
        assert reader.read_all().schema.names == ["n_name", "n_nationkey"]
    stdin = sluice.run("query", "-", input=sql.encode(), env=None, check=True).stdout.decode()
    assert "ALGERIA" in stdin
    explain = sluice.run("query", "explain " + (QUERIES / "q01.sql").read_text().split("\n", 1)[1],
                         check=True).stdout.decode()
    assert "PartialAggregate" in explain and "FinalAggregate" in explain
    assert "pushdown=" in explain
    assert "physical plan (Acero)" in explain
    analyze = sluice.run("query", "explain analyze select count(*) from nation",
                         check=True).stdout.decode()
    assert "analyze: 1 rows" in analyze
    # rows per operator: the scan of nation's 25 rows, the aggregate's one row
    assert re.search(r"Scan nation .*\[rows=25 batches=\d+ first=[\d.]+ ms done=[\d.]+ ms\]",
                     analyze), analyze
    assert re.search(r"FinalAggregate .*\[rows=1 ", analyze), analyze


def test_date_minus_a_string_literal_is_a_date_difference(tpch):
    """PostgreSQL reads '1995-01-01' next to a date as a date (DuckDB refuses to choose)."""
    sluice, _, _ = tpch
    counts = [sluice.run("query", "--format", "csv", "select count(*) from orders where "
                         f"o_orderdate - {literal} > 10", check=True).stdout.decode()
              for literal in ("'1995-01-01'", "date '1995-01-01'")]
    assert counts[0] == counts[1] and counts[0].splitlines()[1] != "0", counts


def test_round_follows_postgresql_not_duckdb(tpch):
    """round(double) is half to even (PostgreSQL's rint; DuckDB rounds half away from zero),
    round(numeric) half away from zero."""
    sluice, _, _ = tpch
    out = sluice.run("query", "--format", "csv",
                     "select round(cast(n_nationkey as double) + 0.5) as d from nation "
                     "order by n_nationkey limit 6", check=True).stdout.decode().splitlines()
    assert [float(v) for v in out[1:]] == [round(k + 0.5) for k in range(6)], out
    out = sluice.run("query", "--format", "csv",
                     "select l_quantity, round(l_quantity + 0.5) from lineitem "
                     "order by l_orderkey, l_linenumber limit 6",
                     check=True).stdout.decode().splitlines()
    rows = [tuple(float(v) for v in line.split(",")) for line in out[1:]]
    assert len(rows) == 6 and all(r == q + 1 for q, r in rows), rows


def test_sql_null_and_division_semantics(tpch):
    sluice, con, _ = tpch
    for sql in ["select 1 / 0 from nation", "select n_nationkey / 0 from nation"]:
        proc = sluice.run("query", sql)
        assert proc.returncode == 1
        assert "divide by zero" in proc.stderr.decode()
    # A WHERE's conjunct that may fail sees only the rows the comparisons before it (or beside
    # it) kept, as PostgreSQL's AND stops early: whatever the share kept, nothing divides by zero.
    for sql, oracle in [
            ("select count(*) from nation where n_regionkey <> 0 and n_nationkey / n_regionkey > 1",
             "select count(*) from nation where n_regionkey <> 0 and n_nationkey // n_regionkey > 1"),
            ("select count(*) from lineitem where 7 / (l_linenumber - 1) > 1 and l_linenumber <> 1",
             "select count(*) from lineitem where l_linenumber <> 1 and 7 // (l_linenumber - 1) > 1")]:
        want = con.execute(oracle).fetchone()[0]
        assert want > 0
        for workers in ["0", "2"]:  # in-process, and in worker processes' filters
            out = sluice.run("query", "--workers", workers, "--format", "csv", sql,
                             check=True).stdout.decode().splitlines()
            assert int(out[1]) == want, (sql, workers, out)
    # A CASE evaluates only the branch (and the conditions) a row reaches: no division by zero
    # where the row takes another branch. Integer division truncates, as in PostgreSQL.
    sql = ("select n_nationkey, case when n_regionkey = 0 then 0 when n_nationkey % n_regionkey = 1 "
           "then 1 else n_nationkey / n_regionkey end from nation order by 1")
    out = sluice.run("query", "--format", "csv", sql, check=True).stdout.decode().splitlines()
    want = [(k, 0 if r == 0 else 1 if k % r == 1 else k // r)
            for k, r in con.execute("select n_nationkey, n_regionkey from nation order by 1").fetchall()]
    assert [tuple(int(v) for v in line.split(",")) for line in out[1:]] == want
    # PostgreSQL's default NULL placement: last ascending, first descending.
    nulls = "select case when n_nationkey < 2 then null else n_nationkey end as k from nation "
    for direction, first, last in [("asc", "2", ""), ("desc", "", "2")]:
        lines = sluice.run("query", "--format", "csv", nulls + "order by k " + direction,
                           check=True).stdout.decode().splitlines()
        assert (lines[1], lines[-1]) == (first, last), (direction, lines)
    out = sluice.run("query", "--format", "csv",
                     "select sum(n_nationkey) as s, count(*) as c from nation where n_nationkey < 0",
                     check=True).stdout.decode().splitlines()
    assert out[1] == ",0"  # SUM over no rows is NULL, COUNT is 0, as in PostgreSQL


def test_a_row_that_fails_names_the_expression(tpch):
    """A division by zero on some row says which select-list column, aggregate argument or
    condition divided, in process and in worker processes' tasks; CSV prints nothing, not a
    header, when the first rows fail."""
    sluice, _, _ = tpch
    cases = [
        ("select l_orderkey, l_linenumber / 2 as half, 7 / (l_linenumber - 1) as per_line "
         "from lineitem", 'column "per_line" (7 / (l_linenumber - 1)): divide by zero'),
        ("select l_linenumber / 2 as half, 7 / (l_linenumber - 1) + 1 as a, "
         "7 / (l_linenumber - 1) - 1 as b from lineitem",  # one part shared by two columns
         'column "a" ((7 / (l_linenumber - 1)) + 1), in its part (7 / (l_linenumber - 1)): '
         'divide by zero'),
        ("select sum(l_quantity / (l_linenumber - 1)) as s from lineitem",
         "expression (cast(l_quantity as decimal128(18, 5)) / (l_linenumber - 1)): "
         "divide by zero"),
        ("select count(*) from lineitem where l_linenumber < 4 and 7 / (l_linenumber - 1) > 1",
         "condition ((7 / (l_linenumber - 1)) > 1): divide by zero"),
        # An aggregate reads as its call, in a final task on a worker too (the shuffle read
        # carries what the partial stage computed).
        ("select l_returnflag, count(*) from lineitem group by l_returnflag "
         "having 10 / (count(*) - count(*)) > 0",
         "condition ((10 / cast(count(*) - count(*) as double)) > 0): divide by zero"),
        ("select l_returnflag, sum(l_extendedprice * (1 - l_discount)) / (count(*) - count(*)) "
         "as r from lineitem group by l_returnflag",
         'column "r" (cast(sum(l_extendedprice * (1 - l_discount)) as double) / '
         "cast(count(*) - count(*) as double)): divide by zero"),
        ("select o_orderpriority, max(o_totalprice) from orders group by 1 "
         "having count(distinct o_custkey) / (count(*) - count(*)) > 1",
         "condition ((cast(count(distinct o_custkey) as double) / "
         "cast(count(*) - count(*) as double)) > 1): divide by zero"),
        # a cast that a dictionary column's values run once each, and a window's argument
        ("select count(*) from lineitem where cast(l_shipmode as date) > date '2000-01-01'",
         "condition (cast(l_shipmode as date32[day]) > 2000-01-01): failed to parse string"),
        ("select l_linenumber, sum(7 / (l_linenumber - 1)) over (partition by l_linenumber) "
         "from lineitem", "expression (7 / (l_linenumber - 1)): divide by zero"),
    ]
    for sql, named in cases:
        for workers in ["0", "2"]:
            proc = sluice.run("query", "--workers", workers, "--format", "csv", sql)
            err = proc.stderr.decode()
            assert proc.returncode == 1 and named in err.lower(), (sql, workers, err)
            assert "half" not in err, err
            assert proc.stdout == b"", (sql, workers, proc.stdout[:200])


# Beyond TPC-H: each SQL feature of the binder, checked against DuckDB on the same files.
# Subqueries as the decorrelate pass rewrites them: EXISTS and NOT EXISTS with conditions beyond
# their keys, IN and NOT IN (correlated too, through DISTINCT and aggregates), scalar subqueries
# correlated and not, NULL keys, string keys, subqueries over derived tables.
SUBQUERIES = [
    "select count(*) from orders where o_orderpriority in (select o2.o_orderpriority from orders o2 "
    "where o2.o_custkey = orders.o_custkey and o2.o_totalprice > 300000)",
    "select count(*) from partsupp where ps_supplycost in (select min(ps2.ps_supplycost) from "
    "partsupp ps2 where ps2.ps_partkey = partsupp.ps_partkey)",
    "select count(*) from customer c where c_nationkey in (select distinct s_nationkey from supplier "
    "where s_suppkey = c.c_custkey) and c_acctbal > 0",
    "select count(*) from customer where c_custkey not in (select o_custkey from orders where "
    "o_custkey = c_custkey and o_orderstatus = 'F')",
    "select n_name from nation where n_regionkey in (select r_regionkey from region where "
    "r_name = 'ASIA' and r_regionkey = n_regionkey) order by 1",
    "select count(*) from customer where c_custkey in (select case when o_totalprice > 200000 "
    "then null else o_custkey end from orders)",
    "select n_name, (select max(c_acctbal) from customer where c_nationkey = n_nationkey and "
    "c_mktsegment = 'BUILDING') as m from nation order by 1",
    "select r_name, (select count(*) from nation where n_regionkey = r_regionkey and "
    "n_name > 'M') as c from region order by 1",
    "select count(*) from (select o_custkey k from orders where o_totalprice > 100000) d where "
    "exists (select * from customer where c_custkey = d.k and c_acctbal > 5000)",
    "select count(*) from orders where exists (select * from lineitem where l_orderkey = o_orderkey "
    "and l_suppkey <> o_custkey and l_quantity > 49)",
    "select count(*) from nation n where not exists (select * from supplier s where "
    "s.s_nationkey = n.n_nationkey and s.s_acctbal > 9900)",
    "select o_orderstatus, count(*) from orders where o_totalprice > (select avg(o_totalprice) "
    "from orders) and exists (select * from customer where c_custkey = o_custkey and "
    "c_mktsegment = 'AUTOMOBILE') group by 1 order by 1",
    "select count(*) from lineitem l1 where l_quantity = (select max(l_quantity) from lineitem l2 "
    "where l2.l_orderkey = l1.l_orderkey) and l_orderkey in (select o_orderkey from orders where "
    "o_orderpriority = '1-URGENT')",
    # a correlated subquery with an uncorrelated one in its select list, or in its WHERE
    "select count(*) from part where p_size > (select max(ps_availqty) - (select min(ps_availqty) "
    "from partsupp) from partsupp where ps_partkey = p_partkey) / 200",
    "select count(*) from part where p_partkey in (select ps_partkey from partsupp where "
    "ps_partkey = p_partkey and ps_supplycost > (select avg(ps_supplycost) from partsupp))",
    # a correlated IN grouped by its own correlation column
    "select count(*) from orders where o_orderkey in (select max(l_orderkey) from lineitem where "
    "l_suppkey = o_custkey group by l_suppkey)",
]


# EXISTS and IN inside expressions (under OR and NOT, in the select list) count the subquery's
# matches; IN keeps SQL's NULL rule.
SUBQUERY_TESTS = [
    "select count(*) from customer where c_nationkey = 1 or exists (select * from orders "
    "where o_custkey = c_custkey and o_totalprice > 400000)",
    "select count(*) from customer where not (exists (select * from orders where "
    "o_custkey = c_custkey) or c_acctbal < 0)",
    "select count(*) from customer where c_custkey in (select o_custkey from orders where "
    "o_totalprice > 450000) or c_nationkey = 3",
    "select count(*) from nation where not (n_regionkey in (select r_regionkey from region "
    "where r_name like 'A%') or n_nationkey > 20)",
    "select n_name, exists (select * from region where r_regionkey = n_regionkey and "
    "r_name like 'A%') e from nation order by 1",
    "select x, x in (select case when r_regionkey = 4 then null else r_regionkey end from region) i "
    "from (select case when n_nationkey < 3 then null else n_nationkey end x from nation) t "
    "order by 1 nulls first",
    "select x, x in (select r_regionkey from region where r_regionkey > 10) i from (select case "
    "when n_nationkey < 3 then null else n_nationkey end x from nation) t order by 1 nulls first",
    "select n_name from nation where n_name like 'A%' or exists (select * from region) order by 1",
    # a correlation key that every OR branch repeats
    "select count(*) from part p1 where (select count(*) from part p2 where (p2.p_brand = "
    "p1.p_brand and p2.p_size < 5) or (p2.p_brand = p1.p_brand and p2.p_size > 45)) > 10",
]


# Equalities between expressions of two FROM items are hash-join keys, each side computed first.
EXPRESSION_KEYS = [
    'select count(*) from nation n1 join nation n2 on n1.n_nationkey = n2.n_nationkey + 1',
    'select n1.n_name, n2.n_name from nation n1, nation n2 where n1.n_regionkey * 5 = n2.n_nationkey order by 1, 2',
    'select count(*) from orders, customer where o_custkey + 0 = c_custkey and c_acctbal > 0',
    'select count(*) from nation n1 join nation n2 on n1.n_nationkey = n2.n_nationkey + 1 join region on r_regionkey = n2.n_regionkey - 0',
    'select count(*) from lineitem, orders where l_orderkey = o_orderkey and l_partkey + l_suppkey = o_custkey',
]


ORACLE = [
    # joins: ON, left, right, self, derived tables with column aliases
    "select n_name, r_name from nation join region on n_regionkey = r_regionkey order by n_name",
    "select c_custkey, count(o_orderkey) as n from customer left join orders "
    "on c_custkey = o_custkey and o_orderstatus = 'F' group by c_custkey order by n, c_custkey "
    "limit 20",
    "select r_name, n_name from region right join nation on n_regionkey = r_regionkey "
    "and r_name <> 'ASIA' order by n_name",
    "select n1.n_name, n2.n_name from nation n1 join nation n2 on n1.n_regionkey = n2.n_regionkey "
    "where n1.n_nationkey < n2.n_nationkey order by 1, 2",
    "select * from (select n_name, n_regionkey from nation) as x(a, b) where b = 1 order by a",
    # subqueries: IN, NOT IN, EXISTS, NOT EXISTS, scalar (correlated and not), nested
    "select s_name from supplier where s_suppkey in "
    "(select ps_suppkey from partsupp where ps_availqty < 20) order by s_name",
    "select count(*) from part where p_partkey not in (select l_partkey from lineitem)",
    "select count(*) from customer where not exists "
    "(select * from orders where o_custkey = c_custkey)",
    "select count(*) from orders where exists (select * from lineitem where l_orderkey = o_orderkey "
    "and l_quantity > 49 and l_suppkey <> o_custkey)",
    "select p_partkey from part where p_retailprice > (select avg(p_retailprice) from part) "
    "and p_size = 1 order by p_partkey",
    "select p_partkey, p_retailprice from part where p_size = 2 and p_retailprice >= "
    "(select max(ps_supplycost) from partsupp where ps_partkey = p_partkey) order by p_partkey",
    "select n_name, (select count(*) from region) as regions from nation order by n_name limit 3",
    "select n_name, (select max(r_regionkey) from region having max(r_regionkey) > 10) as m "
    "from nation order by n_name limit 3",
    # CTEs, one used twice
    "with big as (select o_custkey, sum(o_totalprice) as t from orders group by o_custkey) "
    "select count(*) from big where t > (select avg(t) from big)",
    # aggregates: count(distinct), DISTINCT, GROUP BY expression / alias, HAVING
    "select count(distinct o_custkey) as c from orders",
    "select o_orderpriority, count(distinct o_custkey) from orders group by o_orderpriority "
    "order by 1",
    "select distinct o_orderstatus from orders order by o_orderstatus",
    "select extract(year from o_orderdate) as y, count(*) from orders "
    "group by extract(year from o_orderdate) order by y",
    "select substring(c_phone, 1, 2) as cc, count(*) from customer group by cc having count(*) > 10 "
    "order by cc",
    # NULL ordering, spelled out (DuckDB's default differs from PostgreSQL's; see below)
    "select c_custkey, case when c_acctbal < 0 then null else c_acctbal end as b from customer "
    "order by b desc nulls first, c_custkey limit 10",
    "select c_custkey, o_orderkey from customer left join orders on c_custkey = o_custkey "
    "order by o_orderkey nulls first, c_custkey limit 10",
    "select c_custkey, o_orderkey from customer left join orders on c_custkey = o_custkey "
    "order by o_orderkey desc nulls last, c_custkey limit 10",
    # ORDER BY under LIMIT is a top-N over lineitem's 600K rows (it sorts runs and prunes rows
    # against the N-th): decimal, date, string and double keys, both directions, NULLs at
    # either end, OFFSET, a LIMIT past the rows, a top-N inside a subquery
    "select l_orderkey, l_linenumber, l_comment from lineitem "
    "order by l_extendedprice desc, l_orderkey, l_linenumber limit 7 offset 3",
    "select l_orderkey, l_linenumber from lineitem "
    "order by l_shipdate, l_orderkey desc, l_linenumber limit 20",
    "select l_comment, l_orderkey, l_linenumber from lineitem "
    "order by l_comment desc, l_orderkey, l_linenumber limit 5",
    "select l_orderkey, l_linenumber, case when l_linenumber = 1 then null else l_discount end "
    "as d from lineitem order by d desc nulls first, l_orderkey, l_linenumber limit 9",
    "select l_orderkey, l_linenumber, case when l_linenumber = 1 then null else l_discount end "
    "as d from lineitem order by d nulls first, l_orderkey, l_linenumber limit 9",
    "select l_orderkey, l_linenumber, case when l_linenumber > 1 then null else l_tax end "
    "as t from lineitem order by t desc nulls last, l_orderkey desc, l_linenumber limit 9",
    "select l_orderkey, l_linenumber, cast(l_extendedprice as double) * 0.5 as p "
    "from lineitem order by p desc, l_orderkey, l_linenumber limit 6",
    "select n_name from nation order by n_name desc limit 100",
    "select count(*), sum(l_quantity), min(l_orderkey) from (select l_quantity, l_orderkey "
    "from lineitem order by l_extendedprice, l_orderkey, l_linenumber limit 1000) as t",
    "select l_orderkey, l_linenumber from lineitem "
    "order by l_receiptdate desc, l_orderkey, l_linenumber limit 150000 offset 1000",
    # one aggregate spelled three times is computed once
    "select o_orderstatus, avg(o_totalprice) as a from orders group by o_orderstatus "
    "having avg(o_totalprice) > 100 order by avg(o_totalprice) desc",
    # ORDER BY an expression not selected, LIMIT/OFFSET
    "select o_orderkey from orders order by o_totalprice * 2 desc limit 5 offset 2",
    # NULL semantics of IN lists: NULL IN (...) is NULL, x NOT IN (..., NULL) is never true
    "select count(*) from (select case when n_nationkey < 3 then null else n_nationkey end as k "
    "from nation) as t where k not in (5, 6)",
    "select count(*) from nation where n_nationkey not in (5, null)",
    "select count(*) from nation where n_nationkey in (5, null)",
    # negative and zero integer constants (libpg_query's JSON drops their value)
    "select count(*) from customer where c_acctbal > -500 and c_nationkey > -(1)",
    "select -1 as a, 3 - -2 as b, 0 as c, - 7 as d from nation limit 1",
    # COALESCE, with a NULL argument
    "select coalesce(null, n_name) from nation order by 1 limit 2",
    "select coalesce(case when n_nationkey < 3 then null else n_nationkey end, -1) as k "
    "from nation order by k limit 5",
    # a correlated count() is 0, not NULL, where nothing matches
    "select r_name, (select count(*) from nation where n_regionkey = r_regionkey "
    "and n_name like 'A%') as n from region order by r_name",
    "select n_name, case n_regionkey when 1 then 'one' when 2 then 'two' else 'other' end "
    "from nation order by 1",
    # CAST to an integer rounds, as in PostgreSQL
    "select cast(o_totalprice as integer) as p, cast(o_totalprice as double) as d "
    "from orders order by o_orderkey limit 5",
    # BETWEEN with integer bounds on a decimal column, and NOT BETWEEN with decimal ones
    "select count(*) from customer where c_acctbal between 3096 and 5025",
    "select count(*) from customer where c_acctbal not between -500.5 and 100",
    "select count(*) from lineitem where l_quantity between 10 and 20 and l_discount between "
    "0.05 and 0.07",
    # %, mod, ||, NULLIF, round and the trim family, with NULLs and negative operands
    'select c_custkey % 7 as m, count(*) from customer group by 1 order by 1',
    'select mod(o_orderkey, 5) as m, sum(o_custkey % 3) from orders group by 1 order by 1',
    'select n_nationkey, -n_nationkey % 3, n_nationkey % -4 from nation order by 1',
    "select n_name || '-' || n_regionkey as s from nation order by 1",
    'select c_name || c_acctbal from customer order by c_custkey limit 3',
    'select nullif(n_regionkey, 1) as r, count(*) from nation group by 1 order by 1',
    "select count(*) from customer where nullif(c_mktsegment, 'BUILDING') is null",
    'select count(nullif(c_acctbal, 0)), count(nullif(c_nationkey, c_nationkey)) from customer',
    'select round(c_acctbal, 1) as a, round(c_acctbal) as b, round(c_acctbal, -2) as c from customer order by c_custkey limit 20',
    'select round(sum(l_extendedprice), 2) from lineitem',
    "select trim(both 'A' from n_name) as a, ltrim(n_name, 'AB') as b, rtrim(n_comment) as c, trim(' ' || n_name || ' ') as d from nation order by n_nationkey",
    "select trim(leading 'C' from c_name) as a, trim(trailing '0123456789' from c_name) as b from customer order by c_custkey limit 5",
    'select n_name || null as x from nation limit 2',
    # a string literal next to a date is a date, as PostgreSQL reads it
    "select count(*) from orders where o_orderdate < '1995-03-15'",
    "select count(*) from orders where '1995-03-15' <= o_orderdate and o_orderdate <> '1995-06-01'",
    "select count(*) from orders where o_orderdate between '1995-01-01' and '1995-12-31'",
    "select count(*) from orders where o_orderdate in ('1995-01-01', '1996-01-02', null)",
    # SELECT without FROM: one row of constants
    "select 1 as a, 'x' || 'y' as b, 7 % 3 as c, -7 % 3 as d, null as e",
    "select count(*)",
    "select 1 where false",
    "select sum(x), max(y) from (select 1 as x, 'a' || 'b' as y) t",
    "select n_name from nation where n_regionkey = (select max(x) from (select 2 as x) t) "
    "order by 1",
    # date arithmetic on columns
    "select count(*), min(l_receiptdate - l_commitdate) from lineitem "
    "where l_shipdate + interval '10' day > date '1998-11-20'",
    "select o_orderdate + 5, 3 + o_orderdate, o_orderdate - 10 from orders order by o_orderkey "
    "limit 3",
    "select count(*) from orders where o_orderdate + 30 > date '1998-07-01'",
    # dates as PostgreSQL reads them: one-digit months and days
    "select count(*) from orders where o_orderdate between '1995-1-1' and '1995-3-05'",
    # IN lists of expressions: folded where constant, else x = a OR x = b
    "select count(*) from orders where extract(year from o_orderdate) in (1994, 1994 + 1, 1994 + 2)",
    "select count(*) from nation where n_nationkey in (n_regionkey, n_regionkey * 5, 7)",
    "select count(*) from nation where n_nationkey not in (n_regionkey, 3)",
    "select count(*) from (select case when n_nationkey < 3 then null else n_nationkey end k, "
    "n_regionkey from nation) t where k in (n_regionkey, 10)",
    # a subquery in FROM needs no alias (PostgreSQL 16), also nested and beside parentheses in
    # literals and comments
    "select count(*) from (select n_regionkey from nation) where n_regionkey > 1",
    "select * from (select ')' as p, n_name /* ( */ from nation where n_name <> 'x(') "
    "order by 2 limit 3",
    "select count(*) from (select * from (select n_nationkey from nation)), "
    "(select r_regionkey from region) where n_nationkey = r_regionkey",
    # standard deviation and variance, sample and population, with NULLs and one-row groups
    "select stddev_samp(l_quantity), stddev_pop(l_quantity), var_samp(l_extendedprice), "
    "var_pop(l_discount), stddev(l_tax), variance(l_quantity) from lineitem",
    "select l_returnflag, stddev_samp(l_quantity), var_pop(l_quantity), count(*) from lineitem "
    "group by 1 order by 1",
    "select n_regionkey, stddev_samp(n_nationkey), stddev_pop(n_nationkey) from nation "
    "where n_nationkey < 6 group by 1 order by 1",
    "select stddev_samp(x), var_pop(x) from (select case when n_nationkey < 24 then null "
    "else n_nationkey end x from nation) t",
    # decimal arithmetic past Arrow's rules: integer to decimal casts by value, sums of sums
    # capped at 38 digits, quotients with 16 places (or in double where those do not fit)
    "select cast(0 as decimal(7,2)), cast(n_nationkey as decimal(5,1)), "
    "cast(sum(n_nationkey) as decimal(15,4)) from nation group by n_nationkey order by 2 limit 3",
    "select s1 - s2, s1 + s2 from (select sum(l_extendedprice) s1, sum(l_tax) s2 from lineitem) t",
    "select s1 / s2, s2 / 7, s1 / 3.0 from (select sum(l_extendedprice) s1, sum(l_quantity) s2 "
    "from lineitem) t",
    "select l_extendedprice / l_quantity, l_discount / 3, l_quantity / 7.0, 7 / l_quantity "
    "from lineitem order by l_orderkey, l_linenumber limit 5",
    "select sum(l_extendedprice / l_quantity) from lineitem",
    "select n_nationkey / 3.0 * 100 from nation order by 1 limit 5",
    # LIMIT (with its ORDER BY) inside derived tables, CTEs, IN subqueries and set operations
    "select * from (select o_orderkey, o_totalprice from orders order by o_totalprice desc "
    "limit 5) t order by 1",
    "select count(*) from (select * from lineitem limit 100) t",
    "select n_name from nation where n_nationkey in (select s_nationkey from supplier "
    "order by s_acctbal desc, s_suppkey limit 3) order by 1",
    "with top as (select c_custkey from customer order by c_acctbal desc, c_custkey limit 10 "
    "offset 2) select count(*), min(c_custkey) from top",
    "select * from (select n_name from nation order by n_name limit 3) a union all "
    "select * from (select r_name from region order by r_name desc limit 2) b order by 1",
    # a scalar subquery of any shape: its one value, or NULL for no row
    "select count(*) from orders where o_custkey = (select c_custkey from customer "
    "where c_name = 'Customer#000000010')",
    "select n_name from nation where n_regionkey = (select distinct n_regionkey from nation "
    "where n_name like 'CH%') order by 1",
    "select n_name, (select r_name from region where r_regionkey = 2) from nation "
    "where n_nationkey < 3 order by 1",
    "select count(*) from nation where n_regionkey = (select r_regionkey from region "
    "where r_name = 'nowhere')",
    "select count(*) from orders where o_totalprice > (select avg(o_totalprice) from orders "
    "group by o_orderstatus having o_orderstatus = 'F')",
    # count(DISTINCT) beside other aggregates, with NULLs, under ROLLUP
    "select count(distinct o_custkey), count(*), sum(o_totalprice), avg(o_totalprice), "
    "max(o_orderdate) from orders",
    "select o_orderstatus, count(distinct o_custkey), sum(o_totalprice), count(o_orderkey) "
    "from orders group by 1 order by 1",
    "select count(distinct x), count(x), count(*) from (select case when n_nationkey < 5 then null "
    "else n_regionkey end x from nation) t",
    "select n_regionkey, count(distinct n_nationkey % 3), sum(n_nationkey) from nation "
    "group by rollup(n_regionkey) order by 1 nulls first",
    # a bare NULL in AND / OR / NOT is an unknown boolean; casts to boolean
    "select null or true, null and false, not null, cast('true' as boolean), cast(1 as bool), "
    "cast('f' as boolean), cast(n_nationkey > 3 as int) from nation order by n_nationkey limit 5",
    # ORDER BY an aggregate the select list does not have; uncorrelated EXISTS in WHERE;
    # GREATEST and IN over numbers of several types; a float cast to an integer rounds to even
    "select n_regionkey from nation group by n_regionkey order by sum(n_nationkey) desc, "
    "max(n_name)",
    "select count(*) from nation where exists (select * from region where r_regionkey > 3) "
    "and not exists (select * from region where r_regionkey > 10)",
    "select greatest(n_nationkey, 1.5), least(1.25, n_regionkey, 0.5::float8), "
    "n_nationkey in (1, 2.5, null) from nation order by n_nationkey limit 4",
    "select cast(n_nationkey + 0.5::float8 as int) from nation order by n_nationkey limit 6",
    # a bare NULL given to a text function is a NULL text
    "select upper(null), length(null), lower(null) is null, substring(null, 1, 2), "
    "replace(null, 'a', 'b')",
    # a double literal with an integer literal stays a double
    "select 1e0 / 3, cast(1 as float8) / 3, 3 * 1.5e0",
    # CASE: a branch's division only where the branch is taken
    "select sum(case when l_discount > 0 then l_extendedprice / l_discount else 0 end) "
    "from lineitem where l_orderkey < 1000",
]


# UNION [ALL], INTERSECT and EXCEPT: types unified across sides, NULLs equal to each other when
# rows are compared, under ORDER BY / LIMIT, in derived tables, CTEs and IN subqueries.
SET_OPERATIONS = [
    "select n_name from nation where n_regionkey = 1 union all select r_name from region",
    "select n_regionkey from nation union select r_regionkey from region order by 1",
    "select n_regionkey from nation intersect select r_regionkey from region where r_regionkey < 3",
    "select n_regionkey from nation except select r_regionkey from region where r_regionkey < 3",
    "select n_nationkey, n_name from nation where n_nationkey < 3 union all select r_regionkey, "
    "r_name from region union all select 100, 'x' order by 1 desc, 2 limit 5",
    "select c_custkey, c_acctbal from customer where c_custkey < 5 union select o_custkey, "
    "o_totalprice from orders where o_orderkey < 10 order by c_custkey, c_acctbal",
    "select count(*) from (select l_orderkey from lineitem union select o_orderkey from orders) t",
    "select k, count(*) from (select l_suppkey % 5 k from lineitem union all "
    "select s_suppkey % 5 from supplier) t group by k order by k",
    "select null union select 1",
    "select 1 a, null b union select 1, null union select 2, 'x' order by a",
    "select a from (select 1 a union all select 2 union all select null) t where a > 1",
    "select x from (select case when n_nationkey < 5 then null else n_regionkey end x from nation) t "
    "intersect select case when r_regionkey = 0 then null else r_regionkey end from region",
    "select x from (select case when n_nationkey < 5 then null else n_regionkey end x from nation) t "
    "except select case when r_regionkey = 0 then null else r_regionkey end from region",
    "with t as (select n_regionkey k from nation) select k from t where k < 2 union "
    "select k + 10 from t order by 1",
    "select n_name from nation where n_regionkey in (select r_regionkey from region "
    "where r_name = 'ASIA' union select 0) order by 1",
    "select sum(l_extendedprice) from lineitem where l_orderkey < 100 union all "
    "select sum(o_totalprice) from orders where o_orderkey < 100",
    "select 1.5 union all select 2 order by 1",
    # ALL: the n-th copy of a row meets the n-th copy on the other side
    "select n_regionkey from nation intersect all select n_regionkey from nation "
    "where n_nationkey < 12",
    "select n_regionkey from nation except all select n_regionkey from nation where n_nationkey < 12",
    "select x from (select case when n_nationkey < 6 then null else n_regionkey end x from nation) t "
    "intersect all select case when n_nationkey < 3 then null else n_regionkey end from nation "
    "where n_nationkey < 15",
    "select x from (select case when n_nationkey < 6 then null else n_regionkey end x from nation) t "
    "except all select case when n_nationkey < 3 then null else n_regionkey end from nation "
    "where n_nationkey < 15",
    "select l_linenumber, l_returnflag from lineitem where l_orderkey < 100 except all "
    "select l_linenumber, l_returnflag from lineitem where l_orderkey < 50 order by 1, 2",
]

# FULL OUTER and CROSS joins (a cross product as a hash join on a constant key), expression
# keys in outer joins.
JOINS = [
    "select n_name, r_name from nation full outer join region on n_regionkey = r_regionkey + 2 "
    "order by 1 nulls first, 2 nulls first",
    "select count(*), count(n_name), count(r_name) from nation full join region "
    "on n_regionkey = r_regionkey and n_nationkey < 3",
    "select c_custkey, o_orderkey from (select * from customer where c_custkey < 20) c full join "
    "(select * from orders where o_orderkey < 100) o on c_custkey = o_custkey "
    "order by 1 nulls first, 2 nulls first",
    "select coalesce(a.k, b.k) k, a.n, b.m from (select n_regionkey k, count(*) n from nation "
    "group by 1) a full join (select r_regionkey + 3 k, count(*) m from region group by 1) b "
    "on a.k = b.k order by 1",
    "select count(*) from nation cross join region",
    "select n_name, r_name from nation, region where n_nationkey < 2 order by 1, 2",
    "select * from (select count(*) a from nation) x, (select count(*) b from region) y, "
    "(select sum(o_totalprice) c from orders) z",
    "select n_name, r_name from nation cross join region where n_regionkey < r_regionkey "
    "and n_nationkey < 5 order by 1, 2",
    "select count(*) from nation n1, nation n2 where n1.n_nationkey < n2.n_nationkey",
    "select c_custkey, o_orderkey from customer left join orders on c_custkey = o_custkey + 1 "
    "and o_orderkey < 50 where c_custkey < 30 order by 1, 2 nulls first",
    "select n_name, r_name from region right join nation on n_regionkey * 2 = r_regionkey "
    "order by 1",
]

# String, math and date functions; the aggregated ones run their expressions on workers at
# --workers 2, so their options travel in plan bytes.
FUNCTIONS = [
    "select n_name, position('A' in n_name), strpos(n_name, 'IA'), replace(n_name, 'A', 'a'), "
    "starts_with(n_name, 'I'), regexp_replace(n_name, '[AEIOU]', '_'), "
    "regexp_replace(n_name, '[aeiou]', '_', 'gi') from nation order by 1",
    "select n_name from nation where n_name ~ '^[A-C]' or n_name ~* 'ia$' order by 1",
    "select n_name from nation where n_name !~ 'A' and n_name ilike '%e%' order by 1",
    "select trunc(l_extendedprice / 7, 2), ceil(l_discount * 10), floor(l_tax * 100), trunc(-2.7), "
    "ceil(cast(l_quantity as double) / 7), floor(-l_quantity / 7.0) from lineitem "
    "order by l_orderkey, l_linenumber limit 5",
    "select power(n_nationkey, 2), sqrt(n_nationkey), ln(n_nationkey + 1), log(n_nationkey + 1), "
    "exp(n_regionkey), sign(n_nationkey - 10) from nation order by n_nationkey",
    "select date_trunc('month', o_orderdate), date_trunc('year', o_orderdate), "
    "date_trunc('quarter', o_orderdate), date_trunc('week', o_orderdate), count(*) from orders "
    "group by 1, 2, 3, 4 order by 1, 4 limit 10",
    "select extract(quarter from o_orderdate), extract(dow from o_orderdate), "
    "extract(isodow from o_orderdate), extract(doy from o_orderdate), "
    "extract(week from o_orderdate) from orders order by o_orderkey limit 10",
    "select o_orderdate, cast(o_orderdate + interval '1 month' as date), "
    "cast(o_orderdate - interval '1 year' as date), cast(o_orderdate + interval '13' month as date) "
    "from orders where extract(day from o_orderdate) > 28 order by o_orderkey limit 20",
    "select count(*) from orders where o_orderdate + interval '3 months' < date '1993-01-01'",
    "select greatest(n_nationkey, n_regionkey * 6), least(n_nationkey, n_regionkey * 6, 7), "
    "greatest(case when n_nationkey < 3 then null else n_nationkey end, 5) from nation "
    "order by n_nationkey",
    "select split_part(n_comment, ' ', 2), split_part('a,b', ',', 3), split_part('a,,c', ',', 3) "
    "from nation order by n_nationkey",
    # a string literal next to a number is read as that number, as PostgreSQL does
    "select n_nationkey = '1', n_nationkey + '1', n_nationkey between '1' and '3', "
    "n_nationkey in ('2', '3'), n_nationkey - ' 2 ' from nation order by n_nationkey limit 4",
    "select count(*) from customer where c_acctbal > '1000.50'",
    "select lpad(n_name, 12, '*'), rpad(n_name, 4, ' '), left(n_name, 3), right(n_name, 2), "
    "reverse(n_name), char_length(n_name), concat(n_name, null, '-', n_nationkey) from nation "
    "order by n_nationkey",
    "select trim(both 'A' from c_mktsegment), count(*), sum(position('A' in c_name)) from customer "
    "where c_phone ~ '^1[0-5]' group by 1 order by 1",
    "select extract(dow from o_orderdate), lpad(o_orderpriority, 3, '_'), count(*) from orders "
    "where o_orderdate + interval '1 month' > date '1998-01-01' group by 1, 2 order by 1, 2",
]

# GROUPING SETS, ROLLUP and CUBE with grouping(): one aggregate per grouping, missing keys NULL.
GROUPING = [
    "select l_returnflag, l_linestatus, sum(l_quantity), count(*) from lineitem "
    "group by rollup(l_returnflag, l_linestatus) order by 1 nulls first, 2 nulls first",
    "select l_returnflag, l_linestatus, count(*), grouping(l_returnflag), "
    "grouping(l_returnflag, l_linestatus) from lineitem group by cube(l_returnflag, l_linestatus) "
    "order by 4, 5, 1, 2",
    "select n_regionkey, count(*) from nation group by grouping sets ((n_regionkey), ()) "
    "order by 1 nulls first",
    "select r_name, n_name, count(*) from nation join region on n_regionkey = r_regionkey "
    "group by r_name, rollup(n_name) having count(*) > 1 order by 1, 2 nulls first",
    "select o_orderstatus, o_orderpriority, avg(o_totalprice), min(o_orderdate), max(o_comment) "
    "from orders group by grouping sets ((o_orderstatus), (o_orderpriority), ()) "
    "order by 1 nulls first, 2 nulls first",
    "select case when grouping(o_orderstatus) = 1 then 'all' else o_orderstatus end s, count(*) "
    "from orders group by rollup(o_orderstatus) order by 1",
    "select x, count(*) from (select case when n_nationkey < 5 then null else n_regionkey end x "
    "from nation) t group by rollup(x) order by 1 nulls first, 2",
    "select n_regionkey, count(distinct n_name) from nation group by rollup(n_regionkey) "
    "order by 1 nulls first",
    "select n_regionkey, n_nationkey % 2 p, sum(n_nationkey), rank() over (partition by "
    "grouping(n_regionkey, n_nationkey % 2) order by sum(n_nationkey) desc) r from nation "
    "group by rollup(n_regionkey, n_nationkey % 2) order by 1 nulls first, 2 nulls first",
    "select count(*) from nation group by ()",
    # The finest grouping is the shared aggregate's rows, not regrouped: sums of integers,
    # decimals and doubles, min and max of strings and dates, counts, with NULL keys, the finest
    # set last and twice, and a window over it.
    "select l_returnflag, l_linestatus, sum(l_linenumber), sum(l_extendedprice * l_discount), "
    "sum(l_tax * 0.5e0), min(l_comment), max(l_shipdate), count(*), count(l_orderkey) "
    "from lineitem where l_orderkey < 2000 group by grouping sets ((l_returnflag), (), "
    "(l_linestatus, l_returnflag), (l_returnflag, l_linestatus)) "
    "order by 1 nulls first, 2 nulls first, 8",
    "select x, n_regionkey, grouping(x, n_regionkey) g, sum(n_nationkey), max(n_name) from "
    "(select case when n_nationkey % 3 = 0 then null else n_nationkey % 4 end x, n_regionkey, "
    "n_nationkey, n_name from nation) t group by rollup(x, n_regionkey) "
    "order by 3, 1 nulls first, 2 nulls first",
    "select * from (select o_orderstatus, o_orderpriority, sum(o_totalprice) s, rank() over "
    "(partition by o_orderstatus order by sum(o_totalprice) desc) r from orders "
    "group by rollup(o_orderstatus, o_orderpriority)) t where r <= 3 "
    "order by 1 nulls first, 2 nulls first",
    # FILTER (WHERE ...) on aggregates
    "select count(*) filter (where o_orderstatus = 'F'), sum(o_totalprice) filter (where "
    "o_totalprice > 100000), avg(o_totalprice) filter (where o_orderpriority like '1%'), count(*) "
    "from orders",
    "select o_orderstatus, count(distinct o_custkey) filter (where o_totalprice > 200000), "
    "max(o_orderdate) filter (where o_orderkey < 100), count(*) filter (where false) from orders "
    "group by 1 order by 1",
    "select n_regionkey, count(*) filter (where n_nationkey > 10) from nation "
    "group by rollup(n_regionkey) order by 1 nulls first",
]

# Window functions: ranking, offsets, frames of ROWS and RANGE, over aggregates, with NULLs in
# partition and order keys. Each ORDER BY inside OVER decides every row's result (or the outer
# ORDER BY does not depend on ties).
WINDOWS = [
    "select o_custkey, o_orderkey, row_number() over (partition by o_custkey order by o_orderkey) "
    "rn from orders where o_custkey < 20 order by 1, 2",
    "select o_custkey, o_orderkey, rank() over (partition by o_custkey order by o_orderstatus) r, "
    "dense_rank() over (partition by o_custkey order by o_orderstatus) d, o_orderstatus "
    "from orders where o_custkey < 30 order by 1, 2",
    "select n_regionkey, n_name, percent_rank() over (partition by n_regionkey order by n_name) p, "
    "cume_dist() over (partition by n_regionkey order by n_name) c, "
    "ntile(3) over (partition by n_regionkey order by n_name) t from nation order by 1, 2",
    "select n_nationkey, lag(n_name) over (order by n_nationkey) a, lead(n_name, 2) over "
    "(order by n_nationkey) b, lag(n_nationkey, 1, -1) over (partition by n_regionkey "
    "order by n_nationkey) c from nation order by 1",
    "select n_nationkey, first_value(n_name) over (partition by n_regionkey order by n_nationkey) f, "
    "last_value(n_name) over (partition by n_regionkey order by n_nationkey) l, "
    "nth_value(n_name, 2) over (partition by n_regionkey order by n_nationkey rows between "
    "unbounded preceding and unbounded following) m from nation order by 1",
    "select o_orderkey, sum(o_totalprice) over (order by o_orderkey rows between 2 preceding and "
    "current row) s from orders where o_orderkey < 200 order by 1",
    "select o_orderkey, count(*) over (order by o_orderstatus) c, count(o_orderkey) over () t, "
    "avg(o_totalprice) over (partition by o_orderstatus) a from orders where o_orderkey < 100 "
    "order by 1",
    "select o_orderkey, min(o_totalprice) over (order by o_orderkey rows between 3 preceding and "
    "1 following) mn, max(o_comment) over (order by o_orderkey rows between current row and "
    "2 following) mx from orders where o_orderkey < 300 order by 1",
    "select o_custkey, sum(o_totalprice) s, rank() over (order by sum(o_totalprice) desc) r "
    "from orders group by o_custkey order by r, o_custkey limit 20",
    "select n_regionkey, sum(sum(n_nationkey)) over (order by n_regionkey) running from nation "
    "group by n_regionkey order by 1",
    "select c_nationkey, c_custkey, sum(c_acctbal) over (partition by c_nationkey order by "
    "c_custkey rows unbounded preceding) from customer where c_custkey < 100 order by 1, 2",
    "select x, row_number() over (order by x nulls first) rn, sum(x) over (order by x desc "
    "nulls last) s from (select case when n_nationkey % 3 = 0 then null else n_nationkey end x "
    "from nation) t order by rn",
    "select x, count(x) over (partition by x) c, rank() over (order by x) r from (select case "
    "when n_nationkey % 3 = 0 then null else n_regionkey end x from nation) t "
    "order by x nulls first, c",
    "select l_orderkey, l_linenumber, sum(l_quantity) over (partition by l_orderkey order by "
    "l_linenumber range between current row and unbounded following) from lineitem "
    "where l_orderkey < 50 order by 1, 2",
    "select o_orderkey, sum(o_custkey) over (order by o_orderkey rows between 1 following and "
    "3 following) from orders where o_orderkey < 100 order by 1",
    "select distinct o_orderstatus, count(*) over (partition by o_orderstatus) from orders "
    "order by 1",
    "select n_name, rank() over (order by n_regionkey) * 10 + 1 r from nation order by r, n_name",
    "select * from (select o_custkey, o_orderkey, rank() over (partition by o_custkey order by "
    "o_totalprice desc) r from orders) t where r <= 2 and o_custkey < 50 order by 1, 3, 2",
    "select n_name, r_name, count(*) over (partition by r_name) from nation join region "
    "on n_regionkey = r_regionkey order by 1",
    "select o_orderkey, lag(o_totalprice, 1, 0) over (order by o_orderkey) from orders "
    "where o_orderkey < 40 order by 1",
    "select l_returnflag, l_linestatus, sum(l_quantity), sum(sum(l_quantity)) over "
    "(partition by l_returnflag) from lineitem group by l_returnflag, l_linestatus order by 1, 2",
    "select o_orderdate, count(*) over (order by o_orderdate range between unbounded preceding "
    "and current row) from orders where o_orderkey < 100 order by 1, 2",
    "select n_nationkey, sum(n_nationkey) over (order by n_nationkey rows between 30 preceding "
    "and 30 following) from nation order by 1",
    # frames that end before the current row, at a partition's start
    "select n_nationkey, sum(n_nationkey) over (partition by n_regionkey order by n_nationkey rows "
    "between 2 preceding and 1 preceding), count(*) over (partition by n_regionkey order by "
    "n_nationkey rows between 1 preceding and 1 preceding) from nation order by 1",
]


# Decimal arithmetic and sums run on sluice's own kernels (plan/decimal_kernels.h): operands of
# other scales, literals, NULLs from outer joins and CASE, negative values, empty inputs, and
# aggregates that share a column (sum and avg of one input, count of a column that is never NULL).
DECIMALS = [
    "select l_returnflag, sum(l_extendedprice + 0.001), sum(l_discount - 0.05), "
    "sum(l_quantity * l_extendedprice - l_tax), avg(l_tax * 3), sum(2.5 * l_discount) "
    "from lineitem group by 1 order by 1",
    "select sum(l_extendedprice * (1 - l_discount)), sum(l_discount - 1), count(l_tax), "
    "avg(l_extendedprice), sum(l_extendedprice) from lineitem where l_quantity < 10",
    "select c_nationkey, sum(o_totalprice), avg(o_totalprice), count(o_totalprice), count(*), "
    "min(o_totalprice - 1000) from customer left join orders on c_custkey = o_custkey "
    "and o_totalprice > 400000 group by 1 order by 1",
    "select l_linestatus, sum(case when l_quantity > 45 then l_extendedprice end), "
    "sum(l_extendedprice) filter (where l_discount > 0.08), "
    "sum(case when l_quantity > 100 then l_tax end) from lineitem group by 1 order by 1",
    "select sum(l_extendedprice), avg(l_discount), count(l_quantity) from lineitem where false",
    "select l_orderkey, l_extendedprice * l_discount - l_tax * 100 + 0.5, "
    "(l_extendedprice - 900) * -1 from lineitem where l_orderkey < 8 order by 1, 2, 3",
    "select o_orderpriority, sum(o_totalprice * 0.5 + 1) from orders "
    "where o_totalprice between 1000.50 and 2000 group by 1 order by 1",
    # integers with decimals (q14's quantity * list_price): products, sums, differences and
    # comparisons either way round, NULLs from a left join, and a union of an integer and a
    # decimal column
    "select p_size, sum(p_size * p_retailprice), sum(p_retailprice - p_partkey), "
    "count(*) filter (where p_size > p_retailprice / 100), min(p_partkey + p_retailprice) "
    "from part group by 1 order by 1",
    "select c_custkey, c_nationkey * o_totalprice, o_totalprice + c_nationkey, "
    "c_nationkey >= o_totalprice from customer left join orders on c_custkey = o_custkey "
    "and o_totalprice < 900 where c_custkey < 40 order by 1, 2 nulls first",
    "select x, count(*) from (select n_nationkey x from nation union all select s_acctbal "
    "from supplier where s_suppkey < 20) t group by 1 order by 1",
    # quotients of decimals (q04's): negative ones, by integers, by NULLs, and a zero divisor
    # that a CASE keeps from the rows that would divide by it
    "select l_linestatus, sum(l_extendedprice / l_quantity), min((l_tax - 0.04) / "
    "(l_discount + 0.01)), max(case when l_discount > 0 then l_tax / l_discount end), "
    "sum((l_extendedprice - 1000) / 2), sum(l_tax / l_linenumber) from lineitem "
    "where l_orderkey < 3000 group by 1 order by 1",
    "select c_custkey, o_totalprice / c_acctbal, c_acctbal / 3 from customer left join orders "
    "on c_custkey = o_custkey and o_totalprice < 900 where c_custkey < 40 order by 1",
]


# Aggregates joined to filtered keys, which the aggregate_reduction pass semi joins to those keys
# before grouping (sql/optimizer/aggregate_reduction.h): derived tables, correlated scalar
# subqueries of one and two keys, joins on some of the group keys, IN and NOT IN of a grouped
# subquery with HAVING, and a left join that pads; and an INTERSECT (keys that match NULLs) of
# distinct rows, which it leaves alone.
REDUCTIONS = [
    "select p_partkey, s, c from part join (select l_partkey, sum(l_quantity) s, count(*) c "
    "from lineitem group by l_partkey) a on p_partkey = l_partkey where p_size < 5 order by 1",
    "select ps_partkey, ps_suppkey, q from partsupp join (select l_partkey, l_suppkey, "
    "sum(l_quantity) q from lineitem group by 1, 2) a on ps_partkey = l_partkey "
    "and ps_suppkey = l_suppkey where ps_availqty < 100 order by 1, 2",
    "select p_partkey, count(*), sum(q) from part join (select l_partkey, l_suppkey, "
    "sum(l_quantity) q from lineitem group by 1, 2) a on p_partkey = l_partkey where p_size = 7 "
    "group by 1 order by 1",
    "select p_partkey from part where p_size < 3 and p_partkey not in (select l_partkey "
    "from lineitem group by l_partkey having sum(l_quantity) > 100) order by 1",
    "select p_partkey from part where p_size < 3 and p_partkey in (select l_partkey "
    "from lineitem group by l_partkey having count(*) > 30) order by 1",
    "select p_partkey, a.s from part left join (select l_partkey, sum(l_extendedprice) s "
    "from lineitem where l_quantity > 45 group by 1) a on p_partkey = a.l_partkey "
    "where p_name like '%green%' order by 1",
    "select ps_partkey, ps_suppkey from partsupp where ps_partkey < 50 and ps_availqty > "
    "(select 0.5 * sum(l_quantity) from lineitem where l_partkey = ps_partkey "
    "and l_suppkey = ps_suppkey) order by 1, 2",
    "select p_partkey, p_retailprice from part where p_container = 'SM BOX' and p_retailprice < "
    "(select max(l_extendedprice) / 10 from lineitem where l_partkey = p_partkey) order by 1",
    "select c from (select case when p_size < 3 then null else p_size end c from part "
    "where p_brand = 'Brand#11') x intersect select case when l_quantity > 40 then null "
    "else l_quantity end from lineitem group by 1 order by 1",
]


# An aggregate the query reads in two places runs once; those that differ only in a literal,
# an aggregate or a filter must not.
REPEATED = [
    "with r as (select l_suppkey s, sum(l_quantity) q from lineitem group by l_suppkey) "
    "select count(*), sum(a.q) from r a join r b on a.s = b.s + 1 where a.q > b.q",
    "with r as (select o_custkey c, count(*) n from orders where o_orderstatus = 'F' "
    "group by o_custkey) select (select max(n) from r), (select min(n) from r), count(*) from r",
    "select (select count(*) from lineitem where l_returnflag = 'R'), "
    "(select count(*) from lineitem where l_returnflag = 'A')",
    "select (select sum(l_quantity) from lineitem where l_quantity > 10), "
    "(select sum(l_quantity) from lineitem where l_quantity > 20)",
    "select (select max(l_discount) from lineitem), (select min(l_discount) from lineitem)",
    "with r as (select n_regionkey k, count(*) n from nation group by n_regionkey) "
    "select r_name, a.n, b.n from region join r a on r_regionkey = a.k "
    "left join r b on a.k = b.k + 1 order by r_name",
]


# A fact joined to two relations on one column (TPC-H Q9's part and partsupp on partkey): the
# two may join each other first, on the equality the others imply.
EQUAL_COLUMNS = [
    "select count(*), sum(l_quantity) from lineitem, part, partsupp where l_partkey = p_partkey "
    "and l_partkey = ps_partkey and l_suppkey = ps_suppkey and p_size = 7",
    "select p_brand, count(*) from lineitem, part, partsupp where p_partkey = l_partkey "
    "and ps_partkey = l_partkey and ps_suppkey = l_suppkey and p_container = 'SM BOX' "
    "and ps_availqty < 100 group by p_brand order by p_brand",
    "select count(*) from orders o, lineitem l, customer c where o.o_orderkey = l.l_orderkey "
    "and o.o_custkey = c.c_custkey and l.l_suppkey = c.c_nationkey and c.c_mktsegment = 'AUTO'",
]


# A part that several outputs of one projection compute alike is computed once (TPC-H Q1's
# l_extendedprice * (1 - l_discount)); under a CASE it stays where it is. And a checked cast
# between decimals of one scale only checks digits.
COMMON_PARTS = [
    "select l_returnflag, sum(l_extendedprice * (1 - l_discount)), "
    "sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)), "
    "avg(l_extendedprice * (1 - l_discount)) from lineitem group by l_returnflag order by 1",
    "select sum(nullif(l_discount, 0.05) * l_quantity), "
    "max(nullif(l_discount, 0.05) * l_quantity + 1), count(nullif(l_discount, 0.05) * l_quantity) "
    "from lineitem",
    "select sum(case when l_quantity > 20 then l_extendedprice * l_discount else 0 end), "
    "sum(l_extendedprice * l_discount), "
    "sum(coalesce(nullif(l_extendedprice * l_discount, 0), -1)) from lineitem",
    "select l_orderkey + l_partkey * 2 as a, (l_orderkey + l_partkey * 2) % 7 as b, "
    "l_partkey * 2 as c from lineitem where l_orderkey < 40 order by a, b, c",
    "select upper(substr(p_type, 1, 5)) as a, length(upper(substr(p_type, 1, 5))) as b, count(*) "
    "from part group by 1, 2 order by 1, 2",
    "select sum(cast(l_quantity as decimal(5, 2))), min(cast(l_discount as decimal(3, 2))), "
    "max(cast(l_extendedprice as decimal(30, 2))) from lineitem",
    "select cast(nullif(l_tax, 0.02) as decimal(4, 2)) as t, count(*) from lineitem "
    "group by 1 order by 1",
]


# GROUP BY one integer or date column, or two 32-bit ones (interned strings, int32, date), runs
# on sluice's own grouper: many groups, NULL and negative keys, an int32 key, a date key, distinct
# counts, no rows; pairs few and many, a NULL half.
INT_KEYS = [
    "select l_shipmode, l_returnflag, count(*), sum(l_tax) from lineitem where l_orderkey < 100000 "
    "group by 1, 2 order by 1, 2",
    "select nullif(l_linenumber, 3) as a, l_shipdate, count(*), sum(l_quantity) from lineitem "
    "where l_shipdate < date '1992-03-01' group by 1, 2 order by 1, 2",
    "select -cast(l_partkey % 300 as integer) as a, l_linenumber, count(*) from lineitem "
    "group by 1, 2 order by 3 desc, 1, 2 limit 25",
    "select l_orderkey, sum(l_quantity), count(*), min(l_shipdate), max(l_comment) from lineitem "
    "group by l_orderkey having sum(l_quantity) > 250 order by 1",
    "select nullif(l_linenumber, 3) as k, count(*), sum(l_extendedprice), avg(l_discount) "
    "from lineitem group by 1 order by 1",
    "select o_orderdate, count(*), count(distinct o_custkey) from orders group by o_orderdate "
    "order by 2 desc, 1 limit 20",
    "select -(l_partkey % 1000) as k, count(*), max(l_quantity) from lineitem group by 1 "
    "order by 1 limit 30",
    "select cast(l_suppkey as integer) as s, count(distinct l_orderkey), sum(l_tax) from lineitem "
    "group by 1 order by 2 desc, 1 limit 10",
    "select o_custkey, count(*) from orders where o_orderkey < 0 group by o_custkey",
    "select count(*), sum(n) from (select o_custkey, count(*) as n from orders group by o_custkey) t",
]


# Group keys that a filter below fixes to one value are dropped from the grouping and given back
# as literals (sql/optimizer/constant_group_keys.h): strings, dates, decimals and integers, from
# the grouped table, a joined one or a filter above that moves below; the side a left join pads
# with NULLs (kept), no rows, every key fixed, DISTINCT, HAVING, ROLLUP.
CONSTANT_KEYS = [
    "select l_returnflag, l_linestatus, l_shipmode, count(*), sum(l_quantity) from lineitem "
    "where l_shipmode = 'AIR' group by 1, 2, 3 order by 1, 2",
    "select o_orderdate, o_orderpriority, count(*), sum(o_totalprice) from orders "
    "where o_orderdate = date '1995-03-15' group by o_orderdate, o_orderpriority order by 2",
    "select l_discount, l_linenumber, count(*), sum(l_extendedprice) from lineitem "
    "where l_discount = 0.05 group by 1, 2 order by 2",
    "select n_name, c_mktsegment, count(*), avg(c_acctbal) from customer join nation "
    "on c_nationkey = n_nationkey where n_name = 'FRANCE' group by n_name, c_mktsegment order by 2",
    "select c_mktsegment, o_orderstatus, count(*) from customer left join "
    "(select * from orders where o_orderstatus = 'F') o on c_custkey = o_custkey group by 1, 2",
    "select * from (select l_returnflag, l_linenumber, count(*) c from lineitem group by 1, 2) t "
    "where l_returnflag = 'R' order by 2",
    "select l_shipmode, l_linenumber, count(*) from lineitem where l_shipmode = 'NONE' "
    "group by 1, 2",
    "select l_shipmode, l_linenumber, count(*), max(l_comment) from lineitem "
    "where l_shipmode = 'MAIL' and l_linenumber = 3 group by 1, 2",
    "select l_linenumber, l_returnflag, count(*) from lineitem where l_linenumber = 2 "
    "group by 1, 2 order by 2",
    "select distinct l_shipmode, l_returnflag from lineitem where l_shipmode = 'SHIP' order by 2",
    "select l_shipmode, l_returnflag, sum(l_tax) from lineitem where l_shipmode = 'RAIL' "
    "group by 1, 2 having count(*) > 10 order by 1, 2",
    "select l_shipmode || '-' || l_returnflag as k, count(*) from lineitem "
    "where l_shipmode = 'TRUCK' group by l_shipmode, l_returnflag order by 1",
    "select l_shipmode, l_returnflag, count(*) from lineitem where l_shipmode = 'FOB' "
    "group by rollup(l_shipmode, l_returnflag)",
]


# DISTINCT aggregates of several inputs, and sums and averages of distinct values, beside
# other aggregates: with and without keys, NULLs, no rows, HAVING, FILTER, expressions, a join,
# decimal, integer, float and string values.
DISTINCT_AGGREGATES = [
    "select count(distinct o_custkey), count(distinct o_orderstatus), "
    "count(distinct o_orderpriority) from orders",
    "select o_orderstatus, count(distinct o_custkey), count(distinct o_clerk), sum(o_totalprice), "
    "avg(o_totalprice), count(*), min(o_orderdate), max(o_comment) from orders group by 1 "
    "order by 1",
    "select sum(distinct l_quantity), avg(distinct l_discount), sum(distinct l_linenumber), "
    "avg(distinct l_extendedprice::double) from lineitem",
    "select count(distinct x), sum(distinct x), avg(distinct x), count(distinct y), count(*), "
    "count(x) from (select case when n_nationkey < 5 then null else n_regionkey end x, "
    "case when n_nationkey % 2 = 0 then n_name end y from nation) t",
    "select count(distinct n_name), sum(distinct n_regionkey), avg(distinct n_regionkey), "
    "count(*), sum(n_nationkey), count(n_comment) from nation where n_nationkey < 0",
    "select n_regionkey, count(distinct n_name), sum(distinct n_nationkey), count(*) from nation "
    "where n_nationkey < 0 group by n_regionkey",
    "select o_orderpriority, count(distinct o_custkey) c1, count(distinct o_clerk) c2 from orders "
    "group by 1 having count(distinct o_clerk) > 90 order by c1 desc",
    "select count(distinct o_custkey % 10) filter (where o_orderstatus = 'F'), "
    "count(distinct o_orderpriority), sum(distinct o_shippriority) from orders",
    "select l_returnflag, count(distinct l_linestatus), sum(distinct l_tax), "
    "count(distinct l_orderkey) from lineitem group by l_returnflag order by 1",
    "select min(distinct n_name), max(distinct n_regionkey), count(distinct n_regionkey) "
    "from nation",
    "select r_name, count(distinct n_nationkey), count(distinct c_mktsegment), "
    "avg(distinct c_acctbal) from region, nation, customer where r_regionkey = n_regionkey "
    "and n_nationkey = c_nationkey group by r_name order by 1",
    "select count(distinct o_shippriority), sum(distinct o_custkey), sum(o_custkey), "
    "count(distinct o_custkey) from orders",
    "select n_regionkey, avg(distinct n_nationkey) from nation group by 1 order by 2 desc",
    # under ROLLUP, CUBE and GROUPING SETS, also over no rows
    "select n_regionkey, count(distinct n_name), count(distinct n_nationkey % 3), "
    "sum(distinct n_nationkey), count(*) from nation group by rollup(n_regionkey) "
    "order by 1 nulls first",
    "select o_orderstatus, o_orderpriority, count(distinct o_custkey), count(distinct o_clerk), "
    "avg(distinct o_shippriority), sum(o_totalprice) from orders "
    "group by cube(o_orderstatus, o_orderpriority) order by 1 nulls first, 2 nulls first",
    "select l_returnflag, l_linestatus, count(distinct l_suppkey), sum(distinct l_quantity), "
    "max(l_shipdate) from lineitem where l_orderkey < 1000 "
    "group by grouping sets ((l_returnflag), (l_linestatus), ()) "
    "order by 1 nulls first, 2 nulls first",
    "select n_regionkey, count(distinct n_name), count(distinct n_comment), count(*) from nation "
    "where n_nationkey < 0 group by rollup(n_regionkey)",
]


def test_distinct_aggregates_of_several_inputs_read_their_input_once(tpch):
    # The rows' copies, one per distinct input, come from one scan (exec/expand_node.h): a copy
    # scanned on its own would report its scan's rows.
    sluice, _, _ = tpch
    out = sluice.run("query", "explain analyze " + DISTINCT_AGGREGATES[1],
                     check=True).stdout.decode()
    scans = re.findall(r"Scan orders .*", out)
    assert len(scans) == 3, out
    assert len([s for s in scans if "[rows=" in s]) <= 1, out


# NULL constants and NULL-safe comparisons, CAST's rounding and character positions, over tables
# so that with --workers their aggregates are cut into stages (the .slt files hold the rest).
NULLS_AND_CASTS = [
    # A UNION ALL side of NULL placeholders: min and max once read them as 0 and ''.
    "select min(x), max(x) from (select l_quantity + 1 as x from lineitem where l_orderkey < 1000 "
    "union all select null from orders where o_orderkey < 100) t",
    "select min(y), max(y) from (select o_comment as y from orders union all "
    "select null from customer) t",
    "select count(*), sum(case when l_discount is not distinct from 0.05 then 1 else 0 end) "
    "from lineitem where l_tax is distinct from 0.02",
    "select count(*) from lineitem where l_discount between cast(null as bigint) and 1",
    "select l_returnflag, sum(l_discount / cast(2 as int)), "
    "sum(cast(l_extendedprice as decimal(10,0))) from lineitem group by 1 order by 1",
    "select o_orderstatus, max(case when null then 0 else o_totalprice end), "
    "sum(position('e' in o_comment)) from orders group by 1 order by 1",
]

# NOT IN over columns that may be NULL (the anti join, and the subquery's counts of rows and
# values), and IN or NOT IN on an expression (its key computed under the join, on the FROM item
# it reads).
# bool_and and bool_or, merged across the partial aggregates of a distributed query.
BOOLEAN_AGGREGATES = [
    "select o_orderstatus, bool_and(o_totalprice > 1000), bool_or(o_orderpriority = '1-URGENT' "
    "and o_totalprice > 500000), count(*) from orders group by 1 order by 1",
    "select l_returnflag, bool_or(l_discount > 0.09) filter (where l_quantity > 49), "
    "bool_and(l_tax < 0.08) from lineitem group by 1 order by 1",
    "select bool_and(l_shipdate > date '1992-01-01'), bool_or(l_comment like '%zzz%') from lineitem",
]

# ALL and ANY with comparisons, as conditions and as values.
QUANTIFIED = [
    "select count(*) from orders where o_totalprice > all "
    "(select o_totalprice from orders where o_orderdate < date '1992-01-10')",
    "select o_orderpriority, count(*) from orders where o_totalprice >= any "
    "(select max(o_totalprice) * 0.99 from orders group by o_orderpriority) group by 1 order by 1",
    "select count(*) from customer where c_nationkey <> all "
    "(select n_nationkey from nation where n_regionkey = 1)",
    "select n_name, n_nationkey > all (select r_regionkey * 5 from region), "
    "n_nationkey < any (select nullif(r_regionkey, 4) * 5 from region) from nation order by 1",
]

# USING and NATURAL joins (inner, right, left, full) over derived tables of TPC-H columns.
USING_JOINS = [
    "select k, count(*), sum(l_quantity) from (select o_orderkey k, o_orderdate from orders "
    "where o_orderdate < date '1993-01-01') o join (select l_orderkey k, l_quantity from lineitem) l "
    "using (k) group by k order by 2 desc, 1 limit 10",
    "select count(*), count(k), sum(c) from (select o_custkey k, count(*) c from orders group by 1) o "
    "right join (select c_custkey k, c_name from customer) c using (k)",
    "select k, n, m from (select n_regionkey + 2 k, count(*) n from nation group by 1) a full join "
    "(select r_regionkey k, count(*) m from region group by 1) b using (k) order by k",
    "select count(*) from (select n_nationkey, n_regionkey from nation) a natural join "
    "(select n_nationkey, n_regionkey, n_name from nation where n_nationkey > 5) b",
]

# VALUES lists joined to tables and aggregated (in-process under --workers: a notice says so).
VALUES_LISTS = [
    "select n_name, v from nation join (values (0, 'zero'), (1, 'one'), (30, 'none')) t(k, v) "
    "on n_nationkey = k order by 1",
    "select t.k, count(o_orderkey) from (values ('F'), ('O'), ('X'), (null)) t(k) "
    "left join orders on o_orderstatus = t.k group by t.k order by 1",
]

STRING_AGG = [
    "select n_regionkey, string_agg(n_name, ', ' order by n_name), "
    "string_agg(n_name, '|' order by n_name desc) from nation group by 1 order by 1",
    # many strings per group, merged from the partial steps of several tasks: their order is
    # any, their length and count are not
    "select o_orderstatus, length(string_agg(o_orderpriority, ',')), count(*) from orders "
    "group by 1 order by 1",
    "select string_agg(r_name, ';' order by r_name) from region",
    "select c_mktsegment, string_agg(case when c_acctbal > 9990 then c_name end, ',' "
    "order by case when c_acctbal > 9990 then c_name end) from customer group by 1 order by 1",
    "select n_regionkey, string_agg(n_name, ',' order by n_name) filter (where n_nationkey < 10) "
    "from nation group by 1 order by 1",
    # a group per customer: the partial step passes rows through where grouping does not shrink
    "select s, count(*) from (select o_custkey, string_agg(o_orderstatus, '' order by "
    "o_orderstatus) s from orders group by 1) t group by 1 order by 2 desc, 1 limit 10",
]

NULL_AWARE_IN = [
    "select count(*) from nation where n_nationkey not in "
    "(select case when r_regionkey < 2 then null else r_regionkey end from region)",
    "select c_nationkey, count(*) from customer where c_custkey not in "
    "(select nullif(o_custkey, 100) from orders where o_totalprice > 500000) group by 1 order by 1",
    "select count(*) from orders where o_custkey not in (select c_custkey from customer "
    "where c_acctbal < -990 union all select null)",
    "select count(*) from orders where o_custkey not in "
    "(select nullif(c_custkey, 5) from customer where c_acctbal > 100000)",
    "select o_orderpriority, count(*) from orders, customer where o_custkey = c_custkey "
    "and c_nationkey + 1 not in (select r_regionkey from region) group by 1 order by 1",
    "select l_returnflag, count(*) from lineitem where l_orderkey % 1000 + 1 in "
    "(select o_orderkey from orders where o_orderkey < 100) group by 1 order by 1",
    # Sides of two types meet in the one that holds both: int32 against int64 past int32's
    # range, a decimal of one digit against integers past it, a decimal against doubles.
    "select l_linenumber, count(*) from lineitem where l_linenumber in "
    "(select o_orderkey * 1000000000 + 3 from orders where o_orderkey < 10 union all select 5) "
    "group by 1 order by 1",
    "select count(*) from lineitem where cast(l_linenumber as decimal(1, 0)) in "
    "(select n_nationkey from nation where n_nationkey between 3 and 12)",
    "select count(*) from lineitem where l_discount not in "
    "(select cast(n_nationkey as double) / 100 from nation where n_nationkey < 5)",
]


@pytest.mark.parametrize(
    "sql",
    CONSTANT_KEYS + DISTINCT_AGGREGATES + NULLS_AND_CASTS + NULL_AWARE_IN + BOOLEAN_AGGREGATES
    + QUANTIFIED + USING_JOINS + VALUES_LISTS + STRING_AGG)
@pytest.mark.parametrize("workers", [0, 2])
def test_grouped_queries_match_duckdb_in_process_and_distributed(tpch, sql, workers, tmp_path):
    sluice, con, _ = tpch
    assert_matches_duckdb(sluice, con, sql, tmp_path, "--workers", str(workers))


def test_a_group_key_a_filter_fixes_is_not_grouped_by(tpch):
    sluice, _, _ = tpch
    plan = sluice.run("query", "explain " + CONSTANT_KEYS[0], check=True).stdout.decode()
    keys = [line for line in plan.splitlines() if "FinalAggregate keys=" in line]
    assert len(keys) == 1 and "l_shipmode" not in keys[0] and "l_returnflag" in keys[0], plan
    assert re.search(r'l_shipmode#\d+ := "AIR"', plan), plan
    # A decimal key, and a literal of another precision than the column's.
    plan = sluice.run("query", "explain " + CONSTANT_KEYS[2], check=True).stdout.decode()
    assert re.search(r"FinalAggregate keys=\[l_linenumber#\d+\]", plan), plan
    assert re.search(r"l_discount#\d+ := 0.05,", plan), plan

# LIKE patterns of literal text and '%' are matched by our own kernel (pieces searched in order);
# those with '_' or an escape, and ILIKE, stay Arrow's. NULLs, NOT, a CASE, pieces that overlap.
PLAIN_LIKE = [
    "select count(*), sum(case when o_comment like '%special%requests%' then 1 else 0 end) "
    "from orders where o_comment not like '%pending%deposits%'",
    "select o_orderkey, o_comment from orders where o_comment like 'furiously%final%' "
    "and o_comment like '%ly' order by 1 limit 20",
    "select count(*) from orders where nullif(o_comment, o_comment) like '%a%'",
    "select n_name, n_name like '%A%A%' as two_a, n_name like 'A%A' as a_to_a, "
    "n_name like 'ALGERIA' as exact, n_name like '%' as anything from nation order by 1",
    "select count(*) from part where p_name like '%green%red%' or p_name like '%blue%blue%'",
    "select p_type, count(*) from part where p_type like 'PROMO%' and p_type like '%BRASS' "
    "and p_type not like 'PROMO_P%' group by p_type order by 1",
    "select s_name from supplier where s_comment like '%Customer%Complaints%' order by 1",
]


@pytest.mark.parametrize("sql", ORACLE + SUBQUERIES + SUBQUERY_TESTS + EXPRESSION_KEYS +
                         SET_OPERATIONS + WINDOWS + JOINS + GROUPING + FUNCTIONS + DECIMALS +
                         REDUCTIONS + REPEATED + EQUAL_COLUMNS + COMMON_PARTS + INT_KEYS +
                         PLAIN_LIKE)
def test_sql_feature_matches_duckdb(tpch, sql, tmp_path):
    sluice, con, _ = tpch
    assert_matches_duckdb(sluice, con, sql, tmp_path)


def assert_matches_duckdb(sluice, con, sql, tmp_path, *args, env=None):
    """`sql`'s rows from sluice (with `args`, such as --workers 2, and `env`) are DuckDB's: in
    order where the query orders, as multisets where it does not. Returns sluice's stderr."""
    out = tmp_path / "result.arrow"
    proc = sluice.run("query", *args, "--format", "arrow", "-o", out, sql, env=env)
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    with pa.ipc.open_stream(out) as reader:
        ours = reader.read_all()
    rows = [tuple(normalize(v) for v in r) for r in zip(*[c.to_pylist() for c in ours.columns])]
    want = [tuple(normalize(v) for v in r) for r in con.execute(sql).fetchall()]
    if not re.search(r"\border\s+by\b", sql, re.I):
        rows, want = sorted(rows, key=repr), sorted(want, key=repr)
    assert len(rows) == len(want), f"{len(rows)} rows, DuckDB {len(want)}"
    for i, (a, b) in enumerate(zip(rows, want)):
        assert len(a) == len(b)
        assert all(same(x, y) for x, y in zip(a, b)), f"row {i}: {a} != {b}"
    return err


def test_ipc_and_jsonl_external_tables(tpch):
    sluice, con, root = tpch
    data = root / "data"
    import pyarrow.parquet as pq
    nation = pq.read_table(data / "nation.parquet")
    (data / "ipc_nation").mkdir(exist_ok=True)
    for i, part in enumerate([nation.slice(0, 10), nation.slice(10)]):
        with pa.ipc.new_file(data / "ipc_nation" / f"part-{i}.arrow", part.schema) as w:
            w.write_table(part)
    (data / "jsonl_region").mkdir(exist_ok=True)
    (data / "jsonl_region" / "a.jsonl").write_text(
        "".join(f'{{"rk": {k}, "rname": "{n}"}}\n' for k, n in
                con.execute("select r_regionkey, r_name from region").fetchall()))
    assert "(2 files, 4 columns)" in sluice.run(
        "query", "CREATE EXTERNAL TABLE ipc_nation STORED AS IPC LOCATION 'ipc_nation'",
        check=True).stdout.decode()
    assert "(1 files, 2 columns)" in sluice.run(
        "query", "CREATE EXTERNAL TABLE jsonl_region STORED AS JSONL LOCATION 'jsonl_region/'",
        check=True).stdout.decode()
    ours = sluice.run("query", "--format", "csv",
                      "select rname, count(*) as n from ipc_nation join jsonl_region "
                      "on n_regionkey = rk group by rname order by rname",
                      check=True).stdout.decode().splitlines()
    want = con.execute("select r_name, count(*) from nation join region on n_regionkey = "
                       "r_regionkey group by r_name order by r_name").fetchall()
    assert ours[1:] == [f'"{n}",{c}' for n, c in want]
    # Bad files are refused when the table is declared, naming the file.
    (data / "bad_ipc").mkdir(exist_ok=True)
    (data / "bad_ipc" / "x.arrow").write_bytes(b"not arrow at all")
    proc = sluice.run("query", "CREATE EXTERNAL TABLE bad STORED AS IPC LOCATION 'bad_ipc'")
    assert proc.returncode == 1
    assert "'bad_ipc/x.arrow' is not an Arrow IPC file" in proc.stderr.decode()
    proc = sluice.run("query", "CREATE EXTERNAL TABLE bad STORED AS JSONL LOCATION 'ipc_nation'")
    assert proc.returncode == 1
    assert "no JSONL files at 'ipc_nation'" in proc.stderr.decode()


def test_count_of_a_column_counts_nulls_of_any_file(tpch):
    """count(x) of a NOT NULL column is count(*), but only where every file says NOT NULL: the
    first file here does, the second holds NULLs."""
    sluice, _, root = tpch
    import pyarrow.parquet as pq
    folder = root / "data" / "mixed_nulls"
    folder.mkdir(exist_ok=True)
    required = pa.schema([pa.field("x", pa.int64(), nullable=False)])
    pq.write_table(pa.table({"x": [1, 2, 3]}, schema=required), folder / "a.parquet")
    pq.write_table(pa.table({"x": [4, None, None]}), folder / "b.parquet")
    sluice.run("query", "CREATE EXTERNAL TABLE mixed_nulls STORED AS PARQUET "
               "LOCATION 'mixed_nulls'", check=True)
    out = sluice.run("query", "--format", "csv",
                     "select count(x), count(*), sum(x), avg(x) from mixed_nulls",
                     check=True).stdout.decode().splitlines()
    assert out[1] == "4,6,10,2.5", out


def test_filters_skip_parquet_row_groups(tpch):
    """A WHERE clause reaches the Parquet scan: row groups whose statistics rule it out are
    never read (the scan's own output row count shows it)."""
    sluice, _, root = tpch
    import pyarrow.parquet as pq
    (root / "data" / "sorted").mkdir(exist_ok=True)
    table = pa.table({"k": pa.array(range(10_000), pa.int64()),
                      "v": pa.array([f"v{i}" for i in range(10_000)])})
    pq.write_table(table, root / "data" / "sorted" / "part-0.parquet", row_group_size=1000)
    sluice.run("query", "CREATE EXTERNAL TABLE sorted STORED AS PARQUET LOCATION 'sorted'",
               check=True)
    out = sluice.run("query", "explain analyze select count(*), min(v) from sorted "
                     "where k >= 9500", check=True).stdout.decode()
    assert re.search(r"Scan sorted .*pushdown=\(k#\d+ >= 9500\)\s+\[rows=1000 ", out), out
    csv = sluice.run("query", "--format", "csv", "select count(*) as n from sorted where k >= 9500",
                     check=True).stdout.decode().splitlines()
    assert csv[1] == "500"
    # Also on a string column that the scan keeps as a dictionary under its filter.
    out = sluice.run("query", "explain analyze select k from sorted where v = 'v9999'",
                     check=True).stdout.decode()
    assert re.search(r"Scan sorted .*pushdown=\(v#\d+ == \"v9999\"\)\s+\[rows=1000 ", out), out


@pytest.fixture(scope="module")
def dictionary_strings(tpch):
    """A table of dictionary-encoded strings with NULL values and NULL-free ones, in several
    row groups (several dictionaries), some of whose values do not cast to a number."""
    sluice, con, root = tpch
    import pyarrow.parquet as pq
    folder = root / "data" / "dictionary_strings"
    folder.mkdir(exist_ok=True)
    n = 5000
    kinds = ["a", "b", "c", "ab", None, "num"]
    s = [kinds[i % len(kinds)] for i in range(n)]
    t = [str(i % 7) if s[i] == "num" else (None if i % 11 == 0 else ["x", "y", "a"][i % 3])
         for i in range(n)]
    table = pa.table({"id": pa.array(range(n), pa.int64()), "s": s, "t": t,
                      "amt": pa.array([decimal.Decimal(i % 100) / 4 for i in range(n)],
                                      pa.decimal128(10, 2))})
    pq.write_table(table, folder / "part-0.parquet", row_group_size=1200)
    sluice.run("query", "CREATE EXTERNAL TABLE dictionary_strings STORED AS PARQUET "
               "LOCATION 'dictionary_strings'", check=True)
    con.execute("create view dictionary_strings as select * from "
                f"read_parquet('{folder}/part-0.parquet')")
    return tpch


DICTIONARY_FILTERS = [
    "select id from dictionary_strings where s = 'a' order by id",
    "select id, s from dictionary_strings where s is null or s <> 'b' order by id",
    "select count(*) from dictionary_strings where coalesce(s, 'none') = 'none'",
    "select id, upper(s), t from dictionary_strings where s like 'a%' and t is not null "
    "order by id",
    "select s, count(*), sum(amt) from dictionary_strings where id > 10 group by s order by s",
    # Keys grouped as interned ids, one also read by an aggregate, and a key under a new name.
    "select s, t, count(*), min(t), max(s) from dictionary_strings where amt > 1 "
    "group by s, t order by s, t",
    "select s as kind, count(distinct t) from dictionary_strings where id % 2 = 0 group by s "
    "order by kind",
    "select upper(s), count(*) from dictionary_strings where t <> 'y' group by upper(s) "
    "order by 1",
    "select id, case when s in ('a', 'c') then 'ac' else t end from dictionary_strings "
    "where id % 3 = 0 order by id",
    "select d.id, e.s, e.t from dictionary_strings d join dictionary_strings e "
    "on d.id = e.id + 1 where d.s = 'c' and e.t <> 'x' order by 1",
    # Casting every dictionary value would fail ('a' is no number); the rows kept hold numbers.
    "select id, cast(t as integer) + 1 from dictionary_strings where s = 'num' order by id",
    "select id from dictionary_strings where s = t order by id",
    "select id, s from dictionary_strings where length(s) > 1 and amt between 1 and 2 "
    "order by id",
    "select count(*), count(s), count(t) from dictionary_strings where s is not null "
    "and t is null",
]


@pytest.mark.parametrize("sql", DICTIONARY_FILTERS)
def test_filters_of_dictionary_strings_match_duckdb(dictionary_strings, sql, tmp_path):
    test_sql_feature_matches_duckdb(dictionary_strings, sql, tmp_path)


@pytest.fixture(scope="module")
def events(tpch):
    """A table of microsecond timestamps with NULLs, in two files (so that --workers 2 splits
    it), beside the date of each."""
    sluice, con, root = tpch
    import datetime
    import pyarrow.parquet as pq
    folder = root / "data" / "events"
    folder.mkdir(exist_ok=True)
    start = datetime.datetime(2023, 12, 30, 7, 0, 0)
    n = 4000
    ts = [None if i % 17 == 0 else start + datetime.timedelta(minutes=37 * i, microseconds=i)
          for i in range(n)]
    table = pa.table({"id": pa.array(range(n), pa.int64()),
                      "ts": pa.array(ts, pa.timestamp("us")),
                      "day": pa.array([t.date() if t else None for t in ts], pa.date32())})
    pq.write_table(table.slice(0, n // 2), folder / "part-0.parquet", row_group_size=700)
    pq.write_table(table.slice(n // 2), folder / "part-1.parquet", row_group_size=700)
    sluice.run("query", "CREATE EXTERNAL TABLE events STORED AS PARQUET LOCATION 'events'",
               check=True)
    con.execute(f"create view events as select * from read_parquet('{folder}/*.parquet')")
    return tpch


TIMESTAMP_QUERIES = [
    "select count(*), min(ts), max(ts) from events where ts > '2024-01-15 12:00'",
    "select id from events where ts between '2024-01-02' and timestamp '2024-01-02 06:00:00' "
    "order by id",
    "select date_trunc('day', ts) d, count(*), max(id) from events group by 1 order by 1",
    "select extract(hour from ts) h, count(*) from events where ts < date '2024-01-20' "
    "group by 1 order by 1",
    "select id, cast(ts as date) = day from events where id % 250 = 3 order by id",
    "select count(*) from events where ts in ('2024-01-01 00:01:00.000001', "
    "'2023-12-30 07:37:00.000001')",
    "select max(ts + interval '1' day), min(ts - interval '1' month), count(*) from events "
    "where ts + interval '2' day > '2024-01-10'",
    # intervals with a time of day, and now() (a timestamp with a zone) beside the column
    "select count(*), max(ts - interval '90 minutes'), min(ts + interval '1 day 02:30:00') "
    "from events where ts + interval '36 hours' < '2024-01-05'",
    "select count(*) from events where ts < now() and ts > now() - interval '100 years'",
    "select id, extract(epoch from ts) from events where id % 500 = 1 order by id",
]


@pytest.mark.parametrize("sql", TIMESTAMP_QUERIES)
@pytest.mark.parametrize("workers", [0, 2])
def test_timestamps_match_duckdb_in_process_and_distributed(events, sql, workers, tmp_path):
    sluice, con, _ = events
    assert_matches_duckdb(sluice, con, sql, tmp_path, "--workers", str(workers))


def test_a_cast_fails_for_a_row_that_holds_the_bad_value(dictionary_strings):
    """Where a row the filter keeps holds a value that does not cast, the error is the one the
    plain column gives."""
    sluice, _, _ = dictionary_strings
    proc = sluice.run("query", "select id, cast(t as integer) from dictionary_strings "
                      "where s = 'a' order by id")
    assert proc.returncode == 1
    assert re.search(r"Failed to parse string: '[xya]' as a scalar of type int32",
                     proc.stderr.decode()), proc.stderr.decode()


def test_a_decimal_cast_to_fewer_digits_names_the_value(tpch):
    """A value with more digits than the cast's type fails the query, naming value and type."""
    sluice, _, _ = tpch
    proc = sluice.run("query", "select cast(l_extendedprice as decimal(6, 2)) from lineitem")
    assert proc.returncode == 1
    assert re.search(r"decimal value [0-9]+\.[0-9]{2} does not fit in decimal128\(6, 2\)",
                     proc.stderr.decode()), proc.stderr.decode()


def test_binary_columns_print_as_hex(tpch, tmp_path):
    """Text output shows binary values as PostgreSQL shows bytea; binary formats keep bytes."""
    sluice, _, root = tpch
    import pyarrow.parquet as pq
    (root / "data" / "blobs").mkdir(exist_ok=True)
    pq.write_table(pa.table({"h": pa.array([b"\x00\xff", None], pa.binary()),
                             "f": pa.array([b"\x01\x02", b"\xfe\xff"], pa.binary(2))}),
                   root / "data" / "blobs" / "part-0.parquet")
    sluice.run("query", "CREATE EXTERNAL TABLE blobs STORED AS PARQUET LOCATION 'blobs'",
               check=True)
    csv = sluice.run("query", "--format", "csv", "select h, f from blobs",
                     check=True).stdout.decode().splitlines()
    assert csv[1:] == ['"\\x00ff","\\x0102"', ',"\\xfeff"']
    out = tmp_path / "b.arrow"
    sluice.run("query", "--format", "arrow", "-o", out, "select f from blobs", check=True)
    with pa.ipc.open_stream(out) as reader:
        assert reader.read_all().column(0).to_pylist() == [b"\x01\x02", b"\xfe\xff"]


def test_limit_without_order_by_stops_reading_its_input(sluice, tmp_path):
    """LIMIT over rows in no particular order stops the scan once it has its rows: a table of 40
    JSONL files whose last one is broken answers `LIMIT 3` (the scan never reaches that file),
    while every query that needs all the rows (a count, LIMIT under ORDER BY, an OFFSET past
    the good files) fails naming it."""
    import json

    data = tmp_path / "store" / "j"
    data.mkdir(parents=True)
    for i in range(40):
        with open(data / f"part-{i:03d}.jsonl", "w") as f:
            for j in range(5000):
                f.write(json.dumps({"k": i * 5000 + j, "s": None if j % 7 == 0 else "x"}) + "\n")
    env = {"SLUICE_STORE": f"file://{tmp_path / 'store'}"}
    sluice.run("query", "CREATE EXTERNAL TABLE j STORED AS JSONL LOCATION 'j'", env=env,
               check=True)
    (data / "part-039.jsonl").write_text('{"k": oops\n')
    for sql, want in [("select k from j limit 3", ["0", "1", "2"]),
                      ("select k, s from j where k % 2 = 1 limit 2 offset 3", ["7,", "9,\"x\""]),
                      ("select k from j limit 0", [])]:
        proc = sluice.run("query", "--format", "csv", sql, env=env)
        assert proc.returncode == 0, (sql, proc.stderr.decode())
        assert proc.stdout.decode().strip().splitlines()[1:] == want, sql
    for sql in ["select count(*) from j", "select k from j order by k limit 3",
                "select k from j limit 3 offset 199000"]:
        proc = sluice.run("query", "--format", "csv", sql, env=env)
        assert proc.returncode != 0, sql
        assert "part-039.jsonl" in proc.stderr.decode(), (sql, proc.stderr.decode())


# Scalar subqueries computed as a window over the outer rows (sql/optimizer/window_subqueries.h,
# TPC-H Q17's shape): a fact table with NULL keys and values and a dimension whose keys repeat
# (each fact row then meets two dimension rows) or are NULL, over decimal, float and integer
# values. A rewrite that counted a repeated row twice, or a NULL key as a partition, differs
# from DuckDB here.
WINDOWED_SUBQUERIES = [
    "select count(*), sum(v) from wfacts, wdims where dk = k and tag = 'a' and "
    "v < (select 0.5 * avg(v) + 1 from wfacts f2 where f2.k = dk)",
    "select k, v, f from wfacts, wdims where k = dk and tag in ('a', 'b') and "
    "f >= (select max(f) - 2 from wfacts f2 where dk = f2.k) order by k, v, f",
    "select count(*), sum(i) from wfacts, wdims where dk = k and tag = 'b' and "
    "i > (select avg(i) from wfacts f2 where f2.k = dk)",
    "select k, count(*), min(v) from wfacts, wdims where dk = k and tag <> 'c' and "
    "v >= (select (min(v) + avg(v)) / 2 from wfacts f2 where f2.k = dk) group by k order by k",
    # over two tables with conditions among them, which the outer query has as well (TPC-H Q2)
    "select count(*), sum(v) from wfacts, wgroups, wdims where gk = i and grp = 'x' and "
    "dk = k and tag = 'b' and v > (select avg(v) from wfacts f2, wgroups g2 where "
    "g2.gk = f2.i and g2.grp = 'x' and f2.k = dk)",
    # inside a subquery correlated with the query around it
    "select count(*) from wdims d0 where exists (select * from wfacts, wdims where dk = k and "
    "tag = 'a' and k = d0.dk and v < (select avg(v) from wfacts f2 where f2.k = dk))",
]
# Shapes that a window would get wrong, which stay joins: a sum (a repeated dimension key
# doubles a window's), and an outer condition on a fact column that the subquery does not have.
JOINED_SUBQUERIES = [
    "select count(*), sum(v) from wfacts, wdims where dk = k and tag = 'a' and "
    "v * 40 < (select sum(v) from wfacts f2 where f2.k = dk)",
    "select count(*), sum(v) from wfacts, wdims where dk = k and tag = 'a' and f > 300 and "
    "v < (select avg(v) from wfacts f2 where f2.k = dk)",
    # the subquery has a condition among its tables that the outer query has not
    "select count(*), sum(v) from wfacts, wgroups, wdims where gk = i and "
    "dk = k and tag = 'b' and v > (select avg(v) from wfacts f2, wgroups g2 where "
    "g2.gk = f2.i and g2.grp = 'x' and f2.k = dk)",
]


def register_parquet_tables(sluice, con, data, row_group_size, tables):
    """Writes each of `tables` (name: pyarrow table) as a Parquet file under `data` and makes it
    a table of that name in sluice's catalog and a view in DuckDB's."""
    import pyarrow.parquet as pq
    for name, table in tables.items():
        pq.write_table(table, data / f"{name}.parquet", row_group_size=row_group_size)
        sluice.run("query", f"CREATE EXTERNAL TABLE {name} STORED AS PARQUET LOCATION "
                            f"'{name}.parquet'", check=True)
        con.execute(f"create view {name} as select * from read_parquet('{data}/{name}.parquet')")


@pytest.fixture(scope="module")
def windowed(tpch):
    sluice, con, root = tpch
    data = root / "data"
    n = 5000
    k = [None if i % 97 == 0 else i % 300 for i in range(n)]
    # Fractions vary within a key, so that no average lands exactly on a value: a decimal
    # compared with a double average there depends on the average's last bit.
    v = [None if i % 13 == 0 else decimal.Decimal(f"{(i * 37) % 1000}.{(i * 7919) % 97:02d}")
         for i in range(n)]
    f = [None if i % 17 == 0 else ((i * 7919) % 5000) / 7.0 for i in range(n)]
    i32 = [None if i % 11 == 0 else (i * 31) % 400 for i in range(n)]
    facts = pa.table({"k": pa.array(k, pa.int64()), "v": pa.array(v, pa.decimal128(12, 2)),
                      "f": pa.array(f, pa.float64()), "i": pa.array(i32, pa.int32())})
    # Keys 0..299 tagged a/b/c; every fifth key twice; a NULL key.
    dk = [j for j in range(300)] + [j for j in range(0, 300, 5)] + [None]
    tag = ["abc"[j % 3] for j in range(300)] + ["abc"[j % 3] for j in range(0, 300, 5)] + ["a"]
    dims = pa.table({"dk": pa.array(dk, pa.int64()), "tag": pa.array(tag, pa.string())})
    # Groups of i: some twice (with both names), one NULL.
    gk = list(range(400)) + list(range(0, 400, 7)) + [None]
    grp = ["xy"[j % 2] for j in range(400)] + ["yx"[j % 2] for j in range(0, 400, 7)] + ["x"]
    groups = pa.table({"gk": pa.array(gk, pa.int32()), "grp": pa.array(grp, pa.string())})
    register_parquet_tables(sluice, con, data, 1000,
                            {"wfacts": facts, "wdims": dims, "wgroups": groups})
    return sluice, con


@pytest.mark.parametrize("sql", WINDOWED_SUBQUERIES + JOINED_SUBQUERIES)
@pytest.mark.parametrize("workers", [0, 2])
def test_scalar_subqueries_as_windows_match_duckdb(windowed, sql, workers, tmp_path):
    sluice, con = windowed
    assert_matches_duckdb(sluice, con, sql, tmp_path, "--workers", str(workers))
    explain = sluice.run("query", "explain " + sql, check=True).stdout.decode()
    scans = 1 if sql in WINDOWED_SUBQUERIES else 2
    assert ("Window" in explain) == (scans == 1), explain
    assert explain.count("Scan wfacts") == scans, explain


# ORDER BY ... LIMIT over one Parquet table reads its first sort key first and then only the row
# groups that can hold the top rows (sql/top_n_bound.h): keys of several types, both directions,
# ties, OFFSET, a WHERE on other columns, NULL keys at either end, fewer rows than the LIMIT.
TOP_N_BOUNDS = [
    "select l_orderkey, l_comment from lineitem order by l_extendedprice desc limit 1",
    "select l_orderkey, l_linenumber, l_comment from lineitem "
    "order by l_quantity desc, l_orderkey, l_linenumber limit 12 offset 5",
    "select l_orderkey, l_linenumber, l_shipmode from lineitem where l_shipmode = 'AIR' "
    "and l_discount > 0.05 order by l_receiptdate, l_orderkey, l_linenumber limit 8",
    "select l_comment, l_orderkey from lineitem order by l_comment, l_orderkey limit 3",
    "select o_orderkey, o_comment from orders order by o_orderkey desc limit 4",
    "select k, v, f from wfacts order by v desc nulls last, k, f limit 6",
    "select k, v, f from wfacts order by v desc nulls first, k, f limit 6",
    "select k, i, f from wfacts order by i nulls first, k, f limit 5",
    "select k, v from wfacts where k = 7 order by v desc nulls last, f limit 40",
]


@pytest.mark.parametrize("sql", TOP_N_BOUNDS)
def test_top_n_reads_its_sort_key_first_and_matches_duckdb(windowed, sql, tmp_path):
    sluice, con = windowed
    assert_matches_duckdb(sluice, con, sql, tmp_path)


def test_top_n_skips_row_groups_without_its_rows(windowed):
    sluice, _ = windowed
    analyzed = sluice.run("query", "explain analyze select l_orderkey, l_comment from lineitem "
                          "order by l_extendedprice desc limit 2", check=True).stdout.decode()
    scan = next(line for line in analyzed.splitlines() if "Scan lineitem" in line)
    assert "pushdown=(l_extendedprice" in scan, analyzed
    rows = int(re.search(r"rows=(\d+)", scan).group(1))
    assert 0 < rows < 300_000, scan  # of 600K: two row groups at most
    # A NULL among the top rows (NULLS FIRST) leaves the scan whole.
    analyzed = sluice.run("query", "explain analyze select k, v, f from wfacts "
                          "order by v desc nulls first limit 3", check=True).stdout.decode()
    scan = next(line for line in analyzed.splitlines() if "Scan wfacts" in line)
    assert "pushdown=" not in scan and "rows=5000 " in scan, analyzed
    # Plain EXPLAIN runs nothing, and shows no bound.
    explained = sluice.run("query", "explain select l_orderkey, l_comment from lineitem "
                           "order by l_extendedprice desc limit 2", check=True).stdout.decode()
    assert "pushdown=" not in explained, explained


# An inner join that hashes an estimated 1M rows or more on one integer key runs on our
# integer-key join (exec/int_key_join.h): keys of int64, int32 and date32, repeated on both
# sides and NULL on both, probe keys that find nothing, keys of two integer types, a filtered
# hashed side.
BIG_JOINS = [
    "select count(*), sum(v), count(bs), min(bs), max(bd), sum(bf) "
    "from jfacts, jbig where fk = bk",
    "select bi % 10 as g, count(*), sum(v), min(fk) from jfacts join jbig on fi = bi "
    "group by 1 order by 1",
    "select count(*), sum(v), min(bs), max(bk) from jfacts join jbig on fd = bd where v < 500",
    "select count(*), sum(v), sum(bf) from jfacts join jbig on fi = bk",
    "select bs, count(*), sum(v) from jfacts join jbig on fk = bk "
    "where fk between 1000 and 1500 group by bs order by bs limit 20",
    # the hashed side filtered, still estimated at over 1M rows
    "select count(*), sum(v), min(bs), max(bf) from jfacts join jbig on fk = bk where bi >= 100",
]


@pytest.fixture(scope="module")
def big_join(tpch):
    sluice, con, root = tpch
    data = root / "data"
    # The hashed side: 1.1M rows; keys 0..99,999 twice, every 100,003rd NULL.
    big = con.sql(
        "select case when i % 100003 = 0 then null else i % 1000000 end as bk, "
        "case when i % 77777 = 5 then null else ((i * 7) % 500000)::integer end as bi, "
        "date '1997-05-19' + (i % 3000)::integer as bd, 's' || (i % 1000)::varchar as bs, "
        "(i % 1013) / 8.0 as bf from range(1100000) t(i)").to_arrow_table()
    # The probe side: 2M rows; keys beyond 999,999 find nothing, every 997th NULL.
    facts = con.sql(
        "select case when j % 997 = 3 then null else (j * 13) % 1200000 end as fk, "
        "case when j % 991 = 1 then null else (j % 600000)::integer end as fi, "
        "date '1997-05-19' + (j % 4000)::integer as fd, j % 1000 as v, j * 3 as pad "
        "from range(2000000) t(j)").to_arrow_table()
    register_parquet_tables(sluice, con, data, 256 * 1024, {"jbig": big, "jfacts": facts})
    return sluice, con


@pytest.mark.parametrize("sql", BIG_JOINS)
@pytest.mark.parametrize("workers", [0, 2])
def test_integer_key_joins_of_a_large_table_match_duckdb(big_join, sql, workers, tmp_path):
    sluice, con = big_join
    assert_matches_duckdb(sluice, con, sql, tmp_path, "--workers", str(workers))


def test_a_large_hashed_side_runs_on_the_integer_key_join(big_join):
    sluice, _ = big_join
    explained = sluice.run("query", "explain verbose " + BIG_JOINS[0], check=True).stdout.decode()
    assert "IntKeyJoinNode" in explained, explained
    # An int32 key against an int64 one is cast to int64 first, and joins the same way.
    explained = sluice.run("query", "explain verbose " + BIG_JOINS[3], check=True).stdout.decode()
    assert "IntKeyJoinNode" in explained and "cast(fi#" in explained, explained
    explained = sluice.run("query", "explain verbose " + BIG_JOINS[5], check=True).stdout.decode()
    assert "IntKeyJoinNode" in explained and "Filter (bi#" in explained, explained


# Join keys of two numeric types are compared in a type that holds both (an int32 against an
# int64 aborted the process in Acero's join): inner, outer, semi and anti joins, a decimal
# against an integer, in process and on workers (which cannot hash-partition such keys alike).
MIXED_KEY_JOINS = [
    "select count(*), sum(f.v), count(g.grp) from wfacts f join wgroups g on f.k = g.gk",
    "select f.k, g.grp from wfacts f left join wgroups g on f.k = g.gk "
    "where f.k < 30 order by f.k, g.grp nulls first, f.v nulls first",
    "select count(*) from wfacts f where f.k in (select gk from wgroups where grp = 'x')",
    "select count(*) from wgroups g where not exists (select 1 from wfacts f where f.k = g.gk)",
    "select count(*), min(a.k), max(b.k) from wfacts a join wfacts b on a.v = b.k",
    "select count(*) from wfacts a join wfacts b on a.f = b.i",
]


@pytest.mark.parametrize("sql", MIXED_KEY_JOINS)
@pytest.mark.parametrize("workers", [0, 2])
def test_join_keys_of_two_numeric_types_match_duckdb(windowed, sql, workers, tmp_path):
    sluice, con = windowed
    assert_matches_duckdb(sluice, con, sql, tmp_path, "--workers", str(workers))


@pytest.fixture(scope="module")
def wide_keys(tpch):
    sluice, con, root = tpch
    table = pa.table({"u": pa.array([1, 2**63 + 5], pa.uint64()),
                      "b": pa.array([1, 2**60 + 1], pa.int64()),
                      "d": pa.array([1.0, 2.0], pa.float64())})
    register_parquet_tables(sluice, con, root / "data", 1000, {"wide_keys": table})
    return sluice


@pytest.mark.parametrize("workers", [0, 2])
def test_a_join_key_that_fails_to_compute_fails_naming_it(wide_keys, workers):
    """A key computed on one side that overflows fails the query naming its expression, never
    joining wrong values. (A uint64 past int64's range against an int64 key, and an int64 past
    2^53 against a double key, once failed here too; they now join as DuckDB joins them:
    UNSIGNED_KEYS.)"""
    sluice = wide_keys
    sql = "select count(*) from wide_keys x join wide_keys y on x.b * 1024 = y.b"
    proc = sluice.run("query", "--workers", str(workers), sql)
    assert proc.returncode != 0, sql
    assert "expression (b * 1024): overflow" in proc.stderr.decode(), proc.stderr.decode()


def test_a_worker_killed_in_a_large_integer_key_join_is_retried(big_join, tmp_path):
    """The map tasks join jfacts' splits to all of jbig (read whole by every task) on the
    integer-key join; the first attempt of one dies, and its retry gives DuckDB's rows."""
    sluice, con = big_join
    sql = BIG_JOINS[1]
    plan = sluice.run("query", "--workers", "2", "explain " + sql, check=True).stdout.decode()
    assert "stage 1 (map): 2 tasks" in plan and "read whole by every task: jbig" in plan, plan
    err = assert_matches_duckdb(sluice, con, sql, tmp_path, "--workers", "2",
                                env={"SLUICE_FAILPOINT": "kill:s1p0:1"})
    assert "task s1p0 attempt 1 was killed" in err and "retrying (attempt 2" in err, err


# A GROUP BY over a Parquet scan without a WHERE groups Parquet's dictionary string columns by
# interned ids, as it did under a WHERE: keys with NULLs, two keys, a key that an aggregate
# also reads, a key computed from the string, in process and on workers.
UNFILTERED_STRING_GROUPS = [
    "select l_returnflag, l_linestatus, count(*), sum(l_quantity), avg(l_discount) from lineitem "
    "group by 1, 2 order by 1, 2",
    "select l_shipmode, count(*) from lineitem group by l_shipmode order by 1",
    "select s, t, count(*), sum(v) from dgroups group by s, t order by s nulls first, t",
    "select s, min(s), max(t), count(*) from dgroups group by s order by 1 nulls first",
    "select upper(s) as u, count(v) from dgroups group by 1 order by 1 nulls first",
]


@pytest.fixture(scope="module")
def string_groups(tpch):
    sluice, con, root = tpch
    rows = 3000
    table = pa.table({
        "s": [None if i % 11 == 0 else ["ab", "cd", "ef"][i % 3] for i in range(rows)],
        "t": [["x", "y"][i % 2] for i in range(rows)],
        "v": [None if i % 7 == 0 else i for i in range(rows)],
    })
    register_parquet_tables(sluice, con, root / "data", 500, {"dgroups": table})
    return sluice, con


@pytest.mark.parametrize("sql", UNFILTERED_STRING_GROUPS)
@pytest.mark.parametrize("workers", [0, 2])
def test_unfiltered_group_by_on_dictionary_strings_matches_duckdb(string_groups, sql, workers,
                                                                  tmp_path):
    sluice, con = string_groups
    assert_matches_duckdb(sluice, con, sql, tmp_path, "--workers", str(workers))
    if workers == 0 and "dgroups group by s, t" in sql:
        explained = sluice.run("query", "explain verbose " + sql, check=True).stdout.decode()
        assert "sluice_intern(s#" in explained and "sluice_intern(t#" in explained, explained


# A WHERE that keeps most rows of a batch, under a GROUP BY of one or two integer keys, marks the
# rows it drops rather than copying the others (exec/kept_rows.h). The dropped rows (one in
# twenty, flag 'huge', z = 0) hold values that would fail a cast, overflow a decimal sum, divide
# by zero, and make a group of their own (k = 999): none of it may reach the result.
MARKED_ROWS = [
    "select k, count(*), count(v), sum(v), min(v), max(v), avg(v), sum(m) from mfacts "
    "where flag <> 'huge' group by k order by k nulls first",
    "select s, t, count(*), sum(m), max(dt) from mfacts where flag <> 'huge' "
    "group by s, t order by s nulls first, t",
    "select i, count(*), sum(v) from mfacts where v > 3 group by i order by i nulls first",
    "select dt, count(*), min(k) from mfacts where flag <> 'huge' group by dt order by dt",
    "select k, sum(cast(m as decimal(12, 2))) from mfacts where flag <> 'huge' "
    "group by k order by k nulls first",
    "select i, count(100 / z), count(*) from mfacts where z <> 0 group by i order by i nulls first",
    "select t, sum(m), count(*) from mfacts where flag <> 'huge' and v is not null "
    "group by t order by t",
    # Row groups 0 and 1 keep nine rows in ten (marked), 2 and 3 half (copied).
    "select i, count(*), sum(v) from mfacts where (n < 10000 and n % 10 <> 0) or n % 2 = 0 "
    "group by i order by i nulls first",
]


@pytest.fixture(scope="module")
def marked_rows(tpch):
    sluice, con, root = tpch
    table = con.sql(
        "select case when j % 20 = 7 then 'huge' else 'fine' end as flag, "
        "case when j % 20 = 7 then 999 when j % 13 = 0 then null else j % 50 end as k, "
        "case when j % 17 = 0 then null else (j % 9)::integer end as i, "
        "case when j % 11 = 0 then null else ['ab', 'cd', 'ef'][j % 3 + 1] end as s, "
        "['x', 'y'][j % 2 + 1] as t, "
        "case when j % 7 = 0 then null else j % 100 end as v, "
        "case when j % 20 = 7 then 900000000000000000000000000000000000.00::decimal(38, 2) "
        "else (j % 1000 + 0.25)::decimal(38, 2) end as m, "
        "(case when j % 20 = 7 then 0 else 1 + j % 5 end)::integer as z, "
        "date '1998-01-01' + (j % 40)::integer as dt, j as n "
        "from range(20000) t(j)").to_arrow_table()
    register_parquet_tables(sluice, con, root / "data", 5000, {"mfacts": table})
    return sluice, con


@pytest.mark.parametrize("sql", MARKED_ROWS)
@pytest.mark.parametrize("workers", [0, 2])
def test_a_filter_that_marks_dropped_rows_under_a_group_by_matches_duckdb(marked_rows, sql,
                                                                          workers, tmp_path):
    sluice, con = marked_rows
    assert_matches_duckdb(sluice, con, sql, tmp_path, "--workers", str(workers))


def test_a_worker_killed_in_a_marking_filters_map_task_is_retried(marked_rows, tmp_path):
    """The map tasks filter mfacts' row groups with marks under the partial aggregate; the
    first attempt of one dies, and its retry gives DuckDB's rows."""
    sluice, con = marked_rows
    sql = MARKED_ROWS[0]
    plan = sluice.run("query", "--workers", "2", "explain " + sql, check=True).stdout.decode()
    assert "stage 1 (map): 2 tasks" in plan, plan
    err = assert_matches_duckdb(sluice, con, sql, tmp_path, "--workers", "2",
                                env={"SLUICE_FAILPOINT": "kill:s1p0:1"})
    assert "task s1p0 attempt 1 was killed" in err and "retrying (attempt 2" in err, err


def test_a_marking_filter_shows_in_explain_and_counts_only_kept_rows(marked_rows):
    sluice, con = marked_rows
    sql = MARKED_ROWS[0]
    explained = sluice.run("query", "explain verbose " + sql, check=True).stdout.decode()
    assert "SluiceFilterNode{marks kept rows}" in explained, explained
    analyzed = sluice.run("query", "explain analyze " + sql, check=True).stdout.decode()
    kept = con.execute("select count(*) from mfacts where flag <> 'huge'").fetchone()[0]
    assert re.search(rf"Filter \(.*\)  \[rows={kept} ", analyzed), analyzed
    # Without a GROUP BY on integer keys the filter drops rows as before: no GROUP BY, a string
    # key computed from a column (not interned), an int64 key beside another.
    for other in ["select sum(v) from mfacts where flag <> 'huge'",
                  "select upper(s), count(*) from mfacts where flag <> 'huge' group by 1",
                  "select k, i, count(*) from mfacts where flag <> 'huge' group by k, i"]:
        explained = sluice.run("query", "explain verbose " + other, check=True).stdout.decode()
        assert "SluiceFilterNode{}" in explained, (other, explained)


def test_an_error_on_a_kept_row_still_fails_a_marking_filters_query(marked_rows):
    """Rows with z = 0 pass this WHERE, which drops only v = 1: their division fails the query,
    though the filter marked the batch's rows rather than dropping them."""
    sluice, _ = marked_rows
    sql = "select i, count(100 / z) from mfacts where v is null or v <> 1 group by i"
    explained = sluice.run("query", "explain verbose " + sql, check=True).stdout.decode()
    assert "marks kept rows" in explained, explained
    proc = sluice.run("query", sql)
    assert proc.returncode != 0
    assert "expression (100 / z): divide by zero" in proc.stderr.decode(), proc.stderr.decode()


# A fact table written in the order of its date-like key, with NULL keys in every row group, and
# a dimension of those keys. Row groups of 1000 rows: keys 0..399, 50 rows each.
@pytest.fixture(scope="module")
def clustered(tpch):
    sluice, con, root = tpch
    n = 20_000
    fk = [None if i % 37 == 0 else i // 50 for i in range(n)]
    v = [decimal.Decimal(f"{(i * 31) % 1000}.{i % 100:02d}") for i in range(n)]
    facts = pa.table({"fk": pa.array(fk, pa.int32()), "v": pa.array(v, pa.decimal128(9, 2)),
                      "q": pa.array([(i * 7) % 50 for i in range(n)], pa.int64())})
    d = list(range(400))
    dims = pa.table({"d_sk": pa.array(d, pa.int64()),
                     "d_year": pa.array([j // 100 for j in d], pa.int32()),
                     "d_moy": pa.array([(j // 8) % 12 + 1 for j in d], pa.int32()),
                     "d_q": pa.array([f"{j // 100}Q{(j // 25) % 4 + 1}" for j in d])})
    register_parquet_tables(sluice, con, root / "data", 1000, {"cfacts": facts, "cdates": dims})
    return sluice, con


CLUSTERED = [
    # ranges on the key itself, every comparison, literal on either side
    "select count(*), sum(v) from cfacts where fk between 123 and 140",
    "select count(*), sum(v) from cfacts where fk = 200",
    "select count(*), sum(q) from cfacts where fk < 7",
    "select count(*), sum(q) from cfacts where 395 <= fk",
    "select count(*), sum(q) from cfacts where fk > 398 or fk is null",
    "select count(*) from cfacts where fk is null",
    # a decimal column: its statistics are unscaled digits, never compared as integers
    "select count(*), sum(q) from cfacts where v > 990 and fk < 100",
    # a join to a filtered dimension: the facts' row groups outside its keys' range are skipped
    "select d_year, d_moy, count(*), sum(v) from cfacts, cdates where fk = d_sk "
    "and d_year = 2 and d_moy = 3 group by d_year, d_moy",
    "select count(*), sum(q) from cfacts join cdates on fk = d_sk where d_sk between 10 and 12",
    "select count(*) from cfacts where fk in (select d_sk from cdates where d_moy = 12 "
    "and d_year = 3)",
    # a dimension filter that keeps no row
    "select count(*), sum(v) from cfacts, cdates where fk = d_sk and d_year = 9",
    # an IN list of strings (estimated at a third of the rows), and one that keeps keys all over
    "select d_q, count(*), sum(q) from cfacts, cdates where fk = d_sk "
    "and d_q in ('1Q2', '1Q3', '1Q4') group by d_q",
    "select count(*), sum(v) from cfacts, cdates where fk = d_sk and d_q in ('0Q1', '3Q4')",
    # the probe key renamed on its way up from the scan
    "with f as (select fk as k2, v from cfacts) select count(*), sum(v) from f, cdates "
    "where k2 = d_sk and d_year = 2 and d_moy = 3",
    # a dimension joined to another reading of it, which bounds its keys (TPC-DS q72's weeks);
    # on one key, on two, none kept, a left join the WHERE makes inner
    "select count(*), sum(q) from cfacts, cdates a, cdates b where fk = a.d_sk "
    "and a.d_year = b.d_year and b.d_q = '3Q2'",
    "select count(*), sum(v) from cfacts, cdates a, cdates b where fk = a.d_sk "
    "and a.d_year = b.d_year and a.d_moy = b.d_moy and b.d_sk = 210",
    "select count(*), sum(v) from cfacts, cdates a, cdates b where fk = a.d_sk "
    "and a.d_year = b.d_year and a.d_moy = b.d_moy and b.d_sk = 9999",
    "select count(*) from cfacts join (select a.d_sk from cdates a left join cdates b "
    "on a.d_sk = b.d_sk + 1 where b.d_year = 1 and a.d_moy = 2) s on fk = s.d_sk",
]


@pytest.mark.parametrize("sql", CLUSTERED)
def test_row_groups_skipped_by_key_ranges_match_duckdb(clustered, sql, tmp_path):
    sluice, con = clustered
    assert_matches_duckdb(sluice, con, sql, tmp_path)


def test_a_clustered_fact_scan_reads_only_the_row_groups_of_its_key_range(clustered):
    """Each row group holds NULL keys, which Arrow's pruning cannot rule out; the integer
    statistics can, and a join to a filtered dimension gives the scan the dimension's key range
    (sql/join_key_ranges.h)."""
    sluice, _ = clustered

    def rows_read(sql):
        out = sluice.run("query", "explain analyze " + sql, check=True).stdout.decode()
        scan = next(line for line in out.splitlines() if "Scan cfacts" in line)
        return int(re.search(r"\[rows=(\d+)", scan).group(1)), out

    rows, out = rows_read("select count(*) from cfacts where fk between 121 and 138")
    assert rows == 1000, out  # keys 120..139 are rows 6000..6999
    rows, out = rows_read("select count(*), sum(v) from cfacts, cdates where fk = d_sk "
                          "and d_year = 2 and d_moy = 3")
    assert rows == 1000, out
    assert re.search(r"Scan cfacts .*pushdown=\(\(fk#\d+ >= 208\) and \(fk#\d+ <= 215\)\)", out), out
    # The range is 8 of the 400 keys: the rows of that row group outside it are filtered on the
    # scan, before the join (keys 208..215 are 400 rows, of which 10 have a NULL key).
    kept = re.search(r"Filter \(\(fk#\d+ >= 208\) and \(fk#\d+ <= 215\)\)  \[rows=(\d+)", out)
    assert kept and int(kept.group(1)) == 390, out
    rows, out = rows_read("select count(*) from cfacts, cdates where fk = d_sk "
                          "and d_q in ('1Q2', '1Q3', '1Q4')")
    assert rows == 4000, out  # keys 125..199 are rows 6250..9999: groups 6 to 9
    # The other reading of cdates bounds the year, and with it the days, that cfacts meets.
    rows, out = rows_read("select count(*), sum(v) from cfacts, cdates a, cdates b "
                          "where fk = a.d_sk and a.d_year = b.d_year and a.d_moy = b.d_moy "
                          "and b.d_sk = 210")
    assert rows == 1000, out  # year 2, month 3: keys 208..215
    assert re.search(r"Scan cfacts .*pushdown=\(\(fk#\d+ >= 208\) and \(fk#\d+ <= 215\)\)", out), out
    # Keys from 0 to 399 leave out no row group: the scan gets no range.
    rows, out = rows_read("select count(*) from cfacts, cdates where fk = d_sk "
                          "and d_q in ('0Q1', '3Q4')")
    assert rows == 20_000 and "pushdown=" not in next(
        l for l in out.splitlines() if "Scan cfacts" in l), out
    # Plain EXPLAIN runs nothing, so it shows no range.
    out = sluice.run("query", "explain select count(*) from cfacts, cdates where fk = d_sk "
                     "and d_year = 2 and d_moy = 3", check=True).stdout.decode()
    assert "pushdown=" not in next(l for l in out.splitlines() if "Scan cfacts" in l), out


# Eager aggregation's grouping below a join where the keys barely repeat: 400K fact rows whose
# (item, day) pairs are nearly all distinct, so each thread's grouping passes its rows through
# after kPassCheckRows (exec/int_key_aggregate.h) and the aggregate above adds them up.
@pytest.fixture(scope="module")
def passing(tpch):
    sluice, con, root = tpch
    n = 400_000
    item = [None if i % 101 == 0 else (i * 7919) % 20_000 for i in range(n)]
    day = [(i * 31) % 700 for i in range(n)]
    v = [None if i % 13 == 0 else decimal.Decimal(f"{(i * 37) % 1000}.{i % 100:02d}")
         for i in range(n)]
    q = [None if i % 17 == 0 else (i * 11) % 50 for i in range(n)]
    facts = pa.table({"p_item": pa.array(item, pa.int32()), "p_day": pa.array(day, pa.int32()),
                      "p_v": pa.array(v, pa.decimal128(9, 2)), "p_q": pa.array(q, pa.int64())})
    # Items 0..19999 in 40 groups; every 500th item twice (a duplicate key), item 7 missing.
    items = [j for j in range(20_000) if j != 7] + list(range(0, 20_000, 500))
    dims = pa.table({"i_sk": pa.array(items, pa.int32()),
                     "i_group": pa.array([f"g{j % 40}" for j in items], pa.string())})
    register_parquet_tables(sluice, con, root / "data", 50_000,
                            {"pfacts": facts, "pitems": dims})
    return sluice, con


PASSING = [
    "select i_group, p_day, count(*), sum(p_v), count(p_q), min(p_q), max(p_v) "
    "from pfacts join pitems on p_item = i_sk group by i_group, p_day",
    "select i_group, sum(p_q * 2), count(*) from pfacts, pitems where p_item = i_sk "
    "group by i_group having count(*) > 9000",
]


@pytest.mark.parametrize("sql", PASSING)
def test_grouping_below_a_join_that_passes_rows_matches_duckdb(passing, sql, tmp_path):
    sluice, con = passing
    explained = sluice.run("query", "explain verbose " + sql, check=True).stdout.decode()
    assert "passes rows where grouping does not shrink them" in explained, explained
    assert_matches_duckdb(sluice, con, sql, tmp_path)


def test_grouping_below_a_join_passes_rows_only_where_keys_barely_repeat(passing):
    sluice, con = passing

    def grouped_rows(sql):
        out = sluice.run("query", "explain analyze " + sql, check=True).stdout.decode()
        line = next(l for l in out.splitlines() if "repeats_keys" in l)
        return int(re.search(r"\[rows=(\d+)", line).group(1)), out

    # (item, day) pairs: more rows leave the grouping than there are pairs.
    rows, out = grouped_rows(PASSING[0])
    pairs = con.execute("select count(*) from (select distinct p_item, p_day from pfacts)")
    pairs = pairs.fetchone()[0]
    assert rows > pairs, out
    # Items alone repeat 20 times each: grouped, one row per item.
    rows, out = grouped_rows(PASSING[1])
    items = con.execute("select count(distinct p_item) + 1 from pfacts").fetchone()[0]
    assert rows == items, out  # the NULL key is a group too


# Semi joins whose few outer rows run first and filter an inner side that joins or groups
# (sql/semi_join_reduction.h): orders of 600K lines, each order's lines shipped from one or two
# warehouses, so the self-join on the order number makes more rows than it reads.
@pytest.fixture(scope="module")
def reduced(tpch):
    sluice, con, root = tpch
    n = 600_000
    order = [None if i % 997 == 0 else i // 4 for i in range(n)]
    wh = [(i // 4) % 3 + (i % 2 if (i // 4) % 5 == 0 else 0) for i in range(n)]
    cost = [decimal.Decimal(f"{(i * 37) % 1000}.{i % 100:02d}") for i in range(n)]
    day = [(i * 7) % 365 for i in range(n)]
    lines = pa.table({"r_order": pa.array(order, pa.int64()), "r_wh": pa.array(wh, pa.int32()),
                      "r_cost": pa.array(cost, pa.decimal128(9, 2)),
                      "r_day": pa.array(day, pa.int32())})
    # Returned orders as int32, every 40th order, and a NULL.
    returned = pa.table({"rt_order": pa.array([j * 40 for j in range(3000)] + [None], pa.int32())})
    register_parquet_tables(sluice, con, root / "data", 100_000,
                            {"rlines": lines, "rreturns": returned})
    return sluice, con


REDUCED = [
    # q95's shape: IN a self-join, and IN a join of returns to it
    "with wh as (select a.r_order from rlines a, rlines b where a.r_order = b.r_order "
    "and a.r_wh <> b.r_wh) select count(distinct r_order), sum(r_cost) from rlines "
    "where r_day = 17 and r_order in (select r_order from wh) "
    "and r_order in (select rt_order from rreturns, wh where rt_order = wh.r_order)",
    # IN a grouping, with HAVING; the outer keys NULL in some rows
    "select r_order, r_wh, r_cost from rlines where r_day between 100 and 101 and r_order in "
    "(select a.r_order from rlines a join rlines b on a.r_order = b.r_order "
    "group by a.r_order having count(*) > 4)",
    # EXISTS with a condition beyond the key
    "select count(*), sum(r_cost) from rlines l where r_day = 3 and exists (select * from "
    "rlines a, rlines b where a.r_order = b.r_order and a.r_wh <> b.r_wh and a.r_order = l.r_order "
    "and a.r_wh > l.r_wh)",
    # an outer side that keeps no row
    "select count(*) from rlines where r_day = 400 and r_order in "
    "(select a.r_order from rlines a, rlines b where a.r_order = b.r_order and a.r_wh <> b.r_wh)",
    # an inner side that only scans (1.2M rows through a UNION ALL): the join's Bloom filter
    # does that job, so it is not reduced
    "select count(*), sum(r_cost) from rlines where r_day = 17 and r_order in "
    "(select r_order from rlines where r_wh = 1 union all select r_order from rlines "
    "where r_wh = 2)",
    # NOT EXISTS is an anti join: never reduced, still right
    "select count(*) from rlines l where r_day = 5 and not exists (select * from rlines a, "
    "rlines b where a.r_order = b.r_order and a.r_wh <> b.r_wh and a.r_order = l.r_order)",
]


@pytest.mark.parametrize("sql", REDUCED)
def test_semi_joins_reduced_by_their_outer_rows_match_duckdb(reduced, sql, tmp_path):
    sluice, con = reduced
    out = sluice.run("query", "explain analyze " + sql, check=True).stdout.decode()
    reduced = "not exists" not in sql and "union all" not in sql
    assert ("rows computed first" in out) == reduced, out
    assert_matches_duckdb(sluice, con, sql, tmp_path)


def test_a_semi_joins_outer_rows_run_first_and_filter_its_inner_side(reduced):
    sluice, _ = reduced
    out = sluice.run("query", "explain analyze " + REDUCED[0], check=True).stdout.decode()
    assert "rows computed first" in out, out
    # The self-join reads only the outer rows' orders.
    join = next(l for l in out.splitlines() if "HashJoin inner on r_order" in l)
    assert int(re.search(r"\[rows=(\d+)", join).group(1)) < 5000, out
    # Plain EXPLAIN runs nothing first.
    out = sluice.run("query", "explain " + REDUCED[0], check=True).stdout.decode()
    assert "computed first" not in out, out


# Left joins that the WHERE makes inner (optimizer/outer_join_simplification.h): a condition
# that no NULL of the padded side passes drops every padded row, so the join is an inner one,
# ordered with the other FROM items; one that a NULL may pass keeps it a left join.
OUTER_SIMPLIFIED = [
    # q93's shape: the padded side joined to a third table and filtered through it
    ("select o_custkey, count(*), sum(l_quantity) from orders left join lineitem "
     "on o_orderkey = l_orderkey, part where l_partkey = p_partkey and p_size = 7 "
     "group by o_custkey order by 3 desc, 1 limit 20", True),
    ("select c_custkey, o_orderkey from customer left join orders on c_custkey = o_custkey "
     "where o_totalprice > 400000 order by 2", True),
    ("select count(*) from customer left join orders on c_custkey = o_custkey "
     "where o_orderstatus in ('F', 'P') and c_nationkey = 3", True),
    ("select count(*), sum(o_totalprice) from customer left join orders on c_custkey = o_custkey "
     "and o_orderpriority = '1-URGENT' where o_orderkey is not null", True),
    # a chain: the outer join's key rejects the inner one's NULLs
    ("select count(*) from customer left join orders on c_custkey = o_custkey "
     "left join lineitem on o_orderkey = l_orderkey where l_quantity < 2", True),
    # NULLs of the padded side may pass: the join stays outer
    ("select count(*) from customer left join orders on c_custkey = o_custkey "
     "where o_orderkey is null", False),
    ("select count(*) from customer left join orders on c_custkey = o_custkey "
     "where coalesce(o_totalprice, 0) < 1000", False),
    ("select count(*) from customer left join orders on c_custkey = o_custkey "
     "where o_totalprice > 400000 or c_acctbal < 0", False),
]

# Left joins whose WHERE keeps only the rows they padded: anti joins (q78's sales without returns),
# with the ON condition's residue; not where the padded side is read elsewhere.
OUTER_ANTI = [
    ("select o_orderpriority, count(*), sum(o_totalprice) from orders left join lineitem "
     "on o_orderkey = l_orderkey and l_quantity > 49 where l_orderkey is null "
     "group by o_orderpriority order by 1", True),
    ("select count(*) from customer left join orders on c_custkey = o_custkey "
     "where o_custkey is null and c_nationkey < 10", True),
    ("select c_custkey, o_comment from customer left join orders on c_custkey = o_custkey "
     "where o_custkey is null order by 1 limit 20", False),
]


@pytest.mark.parametrize("sql,anti", OUTER_ANTI)
def test_left_joins_that_keep_only_padded_rows_are_anti_joins(tpch, sql, anti, tmp_path):
    sluice, con, _ = tpch
    out = sluice.run("query", "explain " + sql, check=True).stdout.decode()
    assert ("HashJoin left" not in out) == anti, out
    assert ("anti" in out) == anti, out
    assert_matches_duckdb(sluice, con, sql, tmp_path)


# An anti join of the largest FROM item runs after that item's inner joins, which filter its
# rows (optimizer/join_order.cc, LiftLeftJoins): q78's sales without returns of one year.
LIFTED_ANTI = [
    "select o_orderpriority, count(*), sum(l_extendedprice) from lineitem left join partsupp "
    "on l_partkey = ps_partkey and l_suppkey = ps_suppkey and ps_availqty < 500 "
    "join orders on l_orderkey = o_orderkey where ps_partkey is null "
    "and o_orderdate < date '1993-06-01' group by 1 order by 1",
    # a left join under the anti join, both lifted; the padded side's columns read above them
    "select o_orderstatus, count(*), count(p_partkey), sum(l_quantity), min(p_name) from lineitem "
    "left join part on l_partkey = p_partkey and p_size < 10 left join supplier "
    "on l_suppkey = s_suppkey and s_acctbal < 0 join orders on l_orderkey = o_orderkey "
    "where s_suppkey is null and o_orderpriority = '2-HIGH' group by 1 order by 1",
]


@pytest.mark.parametrize("sql", LIFTED_ANTI)
@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_an_anti_join_of_the_largest_item_runs_after_its_filtering_joins(tpch, sql, workers,
                                                                         tmp_path):
    sluice, con, _ = tpch
    out = sluice.run("query", "explain " + sql, check=True).stdout.decode()
    logical = out[:out.index("physical plan")] if "physical plan" in out else out
    lines = logical.splitlines()
    anti = next(i for i, l in enumerate(lines) if "HashJoin anti" in l)
    inner = next(i for i, l in enumerate(lines) if "HashJoin inner on l_orderkey" in l
                 or "HashJoin inner on o_orderkey" in l)
    depth = lambda line: len(line) - len(line.lstrip())
    assert anti < inner and depth(lines[anti]) < depth(lines[inner]), logical
    assert_matches_duckdb(sluice, con, sql, tmp_path, *workers)


@pytest.mark.parametrize("sql,inner", OUTER_SIMPLIFIED)
def test_left_joins_the_where_makes_inner_match_duckdb(tpch, sql, inner, tmp_path):
    sluice, con, _ = tpch
    out = sluice.run("query", "explain " + sql, check=True).stdout.decode()
    assert ("HashJoin left" not in out) == inner, out
    assert "outer_join_simplification" in out, out
    assert_matches_duckdb(sluice, con, sql, tmp_path)


# Group keys that a unique key determines (sql/determined_keys.h): items keyed 0..1999, each
# with a name and a class; copies of them where one key repeats, and where one is NULL; sales
# of them by day, some of items no table has and some NULL.
@pytest.fixture(scope="module")
def determined(tpch):
    sluice, con, root = tpch
    n_items = 2000
    ids = list(range(n_items))
    names = [f"item {i % 700:03d} {'abcdefgh'[i % 8]}" for i in ids]
    classes = [None if i % 13 == 0 else f"class {i % 9}" for i in ids]
    # dk2 and dk3 are unique wherever dk is: each determines the other, but not both go.
    def copies(keys):
        return {"dk2": pa.array([None if k is None else 2 * k for k in keys], pa.int64()),
                "dk3": pa.array([None if k is None else 3 * k for k in keys], pa.int64())}
    items = pa.table({"dk": pa.array(ids, pa.int32()), "dname": pa.array(names),
                      "dclass": pa.array(classes), **copies(ids)})
    repeated = pa.table({"dk": pa.array(ids[:-1] + [5], pa.int32()),
                         "dname": pa.array(names[:-1] + ["another name"]),
                         "dclass": pa.array(classes), **copies(ids[:-1] + [5])})
    with_null = pa.table({"dk": pa.array(ids[:-1] + [None], pa.int32()),
                          "dname": pa.array(names), "dclass": pa.array(classes),
                          **copies(ids[:-1] + [None])})
    n = 200_000
    sales = pa.table({
        "sk": pa.array([None if i % 211 == 0 else (i * 7) % (n_items + 50) for i in range(n)],
                       pa.int32()),
        "sday": pa.array([(i * 13) % 40 for i in range(n)], pa.int32()),
        "samount": pa.array([decimal.Decimal(f"{i % 500}.{i % 100:02d}") for i in range(n)],
                            pa.decimal128(9, 2))})
    register_parquet_tables(sluice, con, root / "data", 50_000,
                            {"ditems": items, "ditems_rep": repeated, "ditems_null": with_null,
                             "dsales": sales})
    return sluice, con


def _group_keys(out):
    """The key lists of the final aggregates in an EXPLAIN ANALYZE."""
    return [re.search(r"keys=\[([^\]]*)\]", l).group(1).split(", ")
            for l in out.splitlines() if "FinalAggregate keys=[" in l and "keys=[]" not in l]


DETERMINED = [
    # q23's shape: a substring of the name, the key and the day, then only the groups' count
    ("select count(*), sum(cnt) from (select substr(dname, 1, 6) d, dk, sday, count(*) cnt "
     "from dsales, {t} where sk = dk group by substr(dname, 1, 6), dk, sday "
     "having count(*) > 2) x", True),
    # the key through IN, two determined keys (one with NULLs), a sum
    ("select count(*), sum(samount) from dsales where sk in (select dk from (select dname, dclass, "
     "dk, sday, sum(samount) s from dsales, {t} where sk = dk group by dname, dclass, dk, sday "
     "having sum(samount) > 900) x)", True),
    # a left join: sales of no item group under a NULL key with a NULL name
    ("select count(*), sum(c) from (select dname, dk, sday, count(*) c from dsales left join {t} "
     "on sk = dk group by dname, dk, sday) x", True),
    # the determined key is read above: it stays
    ("select d, count(*) from (select substr(dname, 1, 6) d, dk, sday from dsales, {t} "
     "where sk = dk group by substr(dname, 1, 6), dk, sday) x group by d", False),
    # a key of the other table decides nothing about the item's columns
    ("select count(*) from (select dname, sday, count(*) c from dsales, {t} where sk = dk "
     "group by dname, sday) x", False),
    # a WITH query read twice, one reading selecting the name: the copies stay the same (and
    # run once), so neither drops it
    ("with g as (select dname, dk, sday, count(*) c from dsales, {t} where sk = dk "
     "group by dname, dk, sday) select count(*), sum(a.c), min(b.dname) from g a join g b "
     "on a.dk = b.dk and a.sday = b.sday", False),
    # two keys unique in one table and read nowhere else: one goes, the other stays
    ("select count(*) from (select dk2, dk3, sday, count(*) c from dsales, {t} where sk = dk "
     "group by dk2, dk3, sday) x", True),
    # read twice, the name nowhere: both copies drop it alike
    ("with g as (select dname, dk, sday, count(*) c from dsales, {t} where sk = dk "
     "group by dname, dk, sday) select count(*), sum(a.c) from g a join g b "
     "on a.dk = b.dk and a.sday = b.sday + 1", True),
]


@pytest.mark.parametrize("table", ["ditems", "ditems_rep", "ditems_null"])
@pytest.mark.parametrize("sql,drops", DETERMINED)
def test_group_keys_a_unique_key_determines_are_dropped_and_results_match_duckdb(
        determined, table, sql, drops, tmp_path):
    sluice, con = determined
    sql = sql.format(t=table)
    # Plain EXPLAIN reads no data first, so it shows every key; the run drops some only where
    # dk is unique and NULL-free in its table.
    planned = _group_keys(sluice.run("query", "explain " + sql, check=True).stdout.decode())
    out = sluice.run("query", "explain analyze " + sql, check=True).stdout.decode()
    ran = _group_keys(out)
    assert planned and ran, out
    dropped = drops and table == "ditems"
    assert (sum(map(len, ran)) < sum(map(len, planned))) == dropped, out
    if dropped:
        assert all("dname" not in k for keys in ran for k in keys), out
    assert_matches_duckdb(sluice, con, sql, tmp_path)


# A WITH query read several times, each reading filtered on its keys: each copy filtered where the
# conditions land at the bottom of its joins, else one shared computation that reads the OR of
# them (filter_pushdown.cc, ShareConditions; TPC-DS q31 in test_tpcds.py takes that path).
# Readings with IN, IS NULL and a range.
SHARED = [
    "with s as (select d_year, d_moy, sum(v) as t, count(*) as c from cfacts, cdates "
    "where fk = d_sk group by d_year, d_moy) select a.d_moy, a.t, b.t, c.c from s a, s b, s c "
    "where a.d_moy = b.d_moy and b.d_moy = c.d_moy and a.d_year = 1 and b.d_year = 2 "
    "and c.d_year = 3 order by a.d_moy",
    "with s as (select d_q, d_year, sum(q) as t from cfacts join cdates on fk = d_sk "
    "group by d_q, d_year) select a.d_year, a.t, b.t from s a join s b on a.d_year = b.d_year "
    "where a.d_q in ('1Q1', '2Q2') and (b.d_q = '1Q3' or b.d_q is null) order by 1, 2, 3",
    "with s as (select d_moy, sum(v) as t from cfacts, cdates where fk = d_sk group by d_moy) "
    "select a.d_moy, a.t, b.t from s a, s b where a.d_moy between 2 and 4 "
    "and b.d_moy = a.d_moy + 1 and b.d_moy > 3 order by 1",
]


@pytest.mark.parametrize("sql", SHARED)
def test_shared_with_queries_read_the_or_of_their_conditions_match_duckdb(clustered, sql,
                                                                           tmp_path):
    sluice, con = clustered
    assert_matches_duckdb(sluice, con, sql, tmp_path)



# Scalar aggregates over one table, each with its own WHERE, read the table once
# (sql/optimizer/scalar_aggregate_merging.h): every kind of aggregate it merges, strings,
# decimals and dates, a WHERE no row meets, NULLs in the columns and the conditions, one without
# a WHERE, one condition shared, and subqueries in a WHERE. The bool says whether they merge.
MERGED_SCALARS = [
    # TPC-DS q09's shape
    ("select case when (select count(*) from lineitem where l_quantity between 1 and 20) > 2500 "
     "then (select avg(l_extendedprice) from lineitem where l_quantity between 1 and 20) "
     "else (select avg(l_discount) from lineitem where l_quantity between 1 and 20) end b1, "
     "case when (select count(*) from lineitem where l_quantity between 21 and 40) > 2500 "
     "then (select avg(l_extendedprice) from lineitem where l_quantity between 21 and 40) "
     "else (select avg(l_discount) from lineitem where l_quantity between 21 and 40) end b2 "
     "from region where r_regionkey = 1", True),
    ("select (select min(l_shipmode) from lineitem where l_quantity < 5) a, "
     "(select max(l_comment) from lineitem where l_discount > 0.05) b, "
     "(select sum(l_tax) from lineitem where l_shipdate < date '1993-01-01') c, "
     "(select count(l_returnflag) from lineitem where l_returnflag = 'R') d, "
     "(select min(l_receiptdate) from lineitem where l_linestatus = 'O') e", True),
    # no row: a NULL sum, a zero count, beside a real one
    ("select (select sum(l_quantity) from lineitem where l_quantity > 1000) a, "
     "(select count(*) from lineitem where l_quantity > 1000) b, "
     "(select max(l_discount) from lineitem where l_quantity < 3) c", True),
    # NULLs: in a counted column, in a condition's column, as the condition itself
    ("select (select count(*) from dsales where sk < 100) a, "
     "(select count(sk) from dsales where sday < 5) b, "
     "(select avg(samount) from dsales where sk is null) c, "
     "(select max(sk) from dsales where sday > 30 or sk > 10) d, "
     "(select sum(samount) from dsales where sk > 1990) e", True),
    # one without a WHERE reads every row
    ("select (select count(*) from orders) a, "
     "(select sum(o_totalprice) from orders where o_orderstatus = 'F') b, "
     "(select max(o_orderdate) from orders where o_orderpriority = '1-URGENT') c", True),
    # one condition for both: no masks
    ("select (select count(*) from lineitem where l_quantity < 10) a, "
     "(select avg(l_extendedprice) from lineitem where l_quantity < 10) b", True),
    # in a WHERE
    ("select count(*), sum(o_totalprice) from orders "
     "where o_totalprice > (select avg(o_totalprice) from orders where o_orderstatus = 'F') "
     "and o_totalprice < (select max(o_totalprice) from orders where o_orderstatus = 'O')", True),
    # over joins, as TPC-DS q88: conditions on either side, one missing, one above the join
    ("select (select count(*) from lineitem, orders where l_orderkey = o_orderkey "
     "and o_orderpriority = '1-URGENT' and l_quantity < 10) a, "
     "(select sum(l_extendedprice) from lineitem, orders where l_orderkey = o_orderkey "
     "and o_orderpriority = '2-HIGH' and l_quantity < 10) b, "
     "(select max(o_totalprice) from lineitem, orders where l_orderkey = o_orderkey "
     "and l_quantity < 10) c, "
     "(select min(l_shipdate) from lineitem, orders where l_orderkey = o_orderkey "
     "and l_quantity < 10 and (o_orderstatus = 'F' or l_returnflag = 'R')) d", True),
    ("select (select count(*) from lineitem, part, supplier where l_partkey = p_partkey "
     "and l_suppkey = s_suppkey and p_size = 1 and s_nationkey = 3) a, "
     "(select count(*) from lineitem, part, supplier where l_partkey = p_partkey "
     "and l_suppkey = s_suppkey and p_size = 2 and s_nationkey = 7) b, "
     "(select avg(l_quantity) from lineitem, part, supplier where l_partkey = p_partkey "
     "and l_suppkey = s_suppkey and p_size = 3 and s_nationkey = 3) c", True),
    # a small table (20K rows), read twice in a few milliseconds: apart
    ("select (select count(*) from part where p_size < 10) a, "
     "(select avg(p_retailprice) from part where p_size > 10) b", False),
    # other tables, or a DISTINCT one: apart
    ("select (select count(*) from lineitem, orders where l_orderkey = o_orderkey "
     "and o_orderpriority = '1-URGENT') a, (select count(*) from lineitem where l_quantity < 5) b",
     False),
    ("select (select count(*) from orders where o_totalprice > 1000) a, "
     "(select count(*) from customer where c_acctbal > 0) b", False),
    # distinct values of another column: apart
    ("select * from (select count(distinct l_suppkey) a from lineitem where l_quantity < 5) x, "
     "(select count(distinct l_partkey) b from lineitem where l_quantity > 45) y", False),
    # COUNT(DISTINCT) of one value under each condition, as TPC-DS q28
    ("select * from (select avg(l_extendedprice) a1, count(l_extendedprice) a2, "
     "count(distinct l_extendedprice) a3 from lineitem where l_quantity between 0 and 5 "
     "and (l_discount between 0.01 and 0.03 or l_tax > 0.07)) a, "
     "(select avg(l_extendedprice) b1, count(distinct l_extendedprice) b2 from lineitem "
     "where l_quantity between 6 and 10 and l_discount < 0.02) b, "
     "(select count(distinct l_extendedprice) c1 from lineitem where l_quantity > 1000) c", True),
    # overlapping conditions, one of them for all rows; strings; beside plain aggregates
    ("select * from (select count(distinct l_shipmode) a1, count(*) a2 from lineitem "
     "where l_quantity < 20) a, (select count(distinct l_shipmode) b1 from lineitem "
     "where l_quantity < 10 and l_returnflag = 'R') b, "
     "(select count(distinct l_shipmode) c1, max(l_comment) c2 from lineitem) c", True),
    ("select * from (select count(distinct l_suppkey) a from lineitem where l_quantity < 5) x, "
     "(select count(*) b from lineitem where l_quantity < 5) y", True),
    # NULLs among the values and in the conditions; an expression's values
    ("select * from (select count(distinct sk) a1, count(sk) a2 from dsales where sday < 5) a, "
     "(select count(distinct sk) b1 from dsales where sday > 30 or sk > 1000) b, "
     "(select count(distinct sk) c1, count(*) c2 from dsales where sk is null) c, "
     "(select count(distinct sk % 7) d1 from dsales where samount > 400) d, "
     "(select count(distinct sk % 7) e1 from dsales where samount < 10) e", True),
    # over a join
    ("select * from (select count(distinct o_custkey) a from lineitem, orders "
     "where l_orderkey = o_orderkey and l_quantity < 3 and o_orderpriority = '1-URGENT') x, "
     "(select count(distinct o_custkey) b, sum(l_quantity) c from lineitem, orders "
     "where l_orderkey = o_orderkey and l_quantity < 3) y", True),
]


@pytest.mark.parametrize("workers", ["0", "2"])
@pytest.mark.parametrize("sql,merged", MERGED_SCALARS)
def test_scalar_aggregates_over_one_table_merge_and_match_duckdb(determined, sql, merged,
                                                                 workers, tmp_path):
    sluice, con = determined
    out = sluice.run("query", "explain " + sql, check=True).stdout.decode()
    assert ("__m0@" in out) == merged, out
    assert_matches_duckdb(sluice, con, sql, tmp_path, "--workers", workers)


@pytest.fixture(scope="module")
def arrow_decimals(tpch):
    """A file whose stored Arrow schema says decimal64 and decimal32 (Arrow >= 19 writes them),
    NULLs among the values, beside a decimal128 column."""
    sluice, con, root = tpch
    n = 3000
    big = [None if i % 29 == 0 else decimal.Decimal(i * 7919 % 10**9 - 5 * 10**8) / 100
           for i in range(n)]
    small = [None if i % 31 == 0 else decimal.Decimal(i * 37 % 10**5) / 1000 for i in range(n)]
    table = pa.table({"k": pa.array([i % 7 for i in range(n)], pa.int64()),
                      "d64": pa.array(big, pa.decimal64(12, 2)),
                      "d32": pa.array(small, pa.decimal32(8, 3)),
                      "d128": pa.array(big, pa.decimal128(12, 2))})
    register_parquet_tables(sluice, con, root / "data", 700, {"arrow_decimals": table})
    return sluice, con


ARROW_DECIMALS = [
    "select k, sum(d64), sum(d32), avg(d32), count(d64), min(d64), max(d32) from arrow_decimals "
    "group by k order by k",
    "select sum(d64 * (1 - d32)), sum(d64 - d128) from arrow_decimals where d32 between 1 and 50",
    "select k, d64, d32 from arrow_decimals where d64 > 4000000 order by d64 desc, k limit 5",
    "select a.k, count(*) from arrow_decimals a join arrow_decimals b on a.d64 = b.d128 "
    "where a.d32 < 2 group by a.k order by a.k",
]


@pytest.mark.parametrize("sql", ARROW_DECIMALS)
@pytest.mark.parametrize("workers", [0, 2])
def test_decimal64_and_decimal32_in_a_files_schema_read_as_decimals(arrow_decimals, sql, workers,
                                                                    tmp_path):
    """They were once refused by sum ("no kernel matching input types (decimal64(12, 2))");
    they are SQL decimals, with DuckDB's rows."""
    sluice, con = arrow_decimals
    assert_matches_duckdb(sluice, con, sql, tmp_path, "--workers", str(workers))


@pytest.fixture(scope="module")
def in_types(tpch):
    """IN (subquery) sides of two types, with values at the edges of each: unsigned beside
    signed, int64 past 2^53 beside doubles, -0.0, decimal(38, 2) beside decimal(10, 5)."""
    sluice, con, root = tpch
    d = decimal.Decimal
    outer = pa.table({
        "i64": pa.array([1, 2**62 + 1, 11, None], pa.int64()),
        "xi": pa.array([0, 1, 2, None], pa.int32()),
        "dbig": pa.array([d("1.50"), d(10)**35, d("2.00"), None], pa.decimal128(38, 2)),
        "d1": pa.array([d(1), d(9), d(0), None], pa.decimal128(1, 0)),
        "u16": pa.array([1, 65535, 5, None], pa.uint16()),
        "u32": pa.array([1, 2**32 - 1, 5, None], pa.uint32()),
        "u64": pa.array([1, 2**63 + 10, 5, None], pa.uint64())})
    inner = pa.table({
        "ydbl": pa.array([1.0, -0.0, 11.0, None], pa.float64()),
        "ydec5": pa.array([d("1.5"), d(2), d(3), None], pa.decimal128(10, 5)),
        "yi16": pa.array([1, 5, -7, None], pa.int16()),
        "yu8": pa.array([1, 5, 255, None], pa.uint8()),
        "yi64": pa.array([1, 5, -(2**40), None], pa.int64()),
        "yi32": pa.array([9, 10, 99, None], pa.int32())})
    register_parquet_tables(sluice, con, root / "data", 1000,
                            {"in_outer": outer, "in_inner": inner})
    return sluice, con


IN_TYPES = [
    "select i64 from in_outer where i64 in (select ydbl from in_inner)",
    "select xi from in_outer where xi in (select ydbl from in_inner)",
    "select xi from in_outer where xi not in (select ydbl from in_inner where ydbl is not null)",
    "select dbig from in_outer where dbig in (select ydec5 from in_inner)",
    "select d1 from in_outer where d1 in (select yi32 from in_inner)",
    "select d1 from in_outer where d1 not in (select yi32 from in_inner where yi32 is not null)",
    "select u16 from in_outer where u16 in (select yi16 from in_inner)",
    "select u32 from in_outer where u32 in (select yu8 from in_inner)",
    "select u64 from in_outer where u64 in (select yi64 from in_inner)",
    "select xi from in_outer where xi in (select yi64 from in_inner)",
    "select i64 from in_outer where i64 + 0 in (select yi16 from in_inner)",
]


@pytest.mark.parametrize("sql", IN_TYPES)
@pytest.mark.parametrize("workers", [0, 2])
def test_in_subquery_sides_of_two_types_match_duckdb(in_types, sql, workers, tmp_path):
    """Integers and decimals meet in a type that holds both (unsigned beside signed included);
    beside a double both sides compare as doubles, an int64 past 2^53 as its nearest one, and
    -0.0 matches 0; past 38 digits the subquery's values are cast to the column's type."""
    sluice, con = in_types
    assert_matches_duckdb(sluice, con, sql, tmp_path, "--workers", str(workers))


@pytest.fixture(scope="module")
def join_keys(tpch):
    """A fact table of 1.5M rows (36 MB of keys, well past the 8 MiB that a join's probe side may
    send ahead of its build side) and small dimensions of each key type: once the build sides
    have ended, the probe rows are filtered by their keys (exec/join_gate.h), where a dimension
    is filtered (a whole table's keys filter nothing). Written by DuckDB, with NULL keys on both
    sides, negative keys, repeated build keys and a set too sparse for a bitmap."""
    sluice, con, root = tpch
    data = root / "data"
    files = {
        "jk_fact": "select case when i % 101 = 0 then null else (i * 7919) % 20000 - 5000 end "
                   "as k64, case when i % 53 = 0 then null else (i % 3000)::int end as k32, "
                   "(date '2000-01-01' + (i % 1000)::int) as d, (i % 4000)::uinteger as u32, "
                   "i as v from range(1500000) t(i)",
        "jk_dim64": "select id, ['a', 'b', 'c', 'd'][(id % 4 + 4) % 4 + 1] as tag "
                    "from range(-5000, 15000, 3) t(id) union all select null, 'a'",
        "jk_dim32": "select id::int as id, id % 7 = 0 as flag from range(3000) t(id) "
                    "union all select id::int, false from range(0, 3000, 10) t(id) "
                    "union all select null, true",
        "jk_dimd": "select date '2000-01-01' + j::int as dd, j % 10 = 0 as flag "
                   "from range(0, 1000, 2) t(j)",
        "jk_dimu": "select id::uinteger as id from range(0, 4000, 9) t(id)",
        "jk_pairs": "select (i * 7919) % 20000 - 5000 as a, (i % 3000)::int as b "
                    "from range(0, 1500000, 997) t(i) where i % 101 <> 0 and i % 53 <> 0",
        "jk_sparse": "select id from range(-5000, 15000, 997) t(id) "
                     "union all select 1099511627776 union all select -1099511627776",
    }
    for name, select in files.items():
        con.execute(f"copy ({select}) to '{data}/{name}.parquet' (format parquet)")
        sluice.run("query", f"CREATE EXTERNAL TABLE {name} STORED AS PARQUET LOCATION "
                            f"'{name}.parquet'", check=True)
        con.execute(f"create view {name} as select * from read_parquet('{data}/{name}.parquet')")
    return sluice, con


JOIN_KEYS = [
    "select count(*), sum(f.v) from jk_fact f join jk_dim64 d on f.k64 = d.id where d.tag = 'a'",
    "select d.tag, count(*), sum(f.v) from jk_fact f join jk_dim64 d on f.k64 = d.id "
    "join jk_dim32 e on f.k32 = e.id where e.flag group by d.tag order by d.tag",
    "select count(*), sum(v) from jk_fact where k64 in (select id from jk_dim64 where tag = 'b')",
    "select count(*) from jk_fact f where exists "
    "(select 1 from jk_dim32 e where e.id = f.k32 and e.flag)",
    "select count(*) from jk_fact f where not exists "
    "(select 1 from jk_dim32 e where e.id = f.k32 and e.flag)",
    "select count(*), sum(f.v) from jk_fact f join jk_dim64 d on f.k64 = d.id "
    "where d.tag = 'none'",
    "select count(*), sum(f.v) from jk_fact f join jk_dim64 d on f.k32 = d.id where d.tag = 'c'",
    "select count(*), min(f.d), max(f.d) from jk_fact f join jk_dimd x on f.d = x.dd "
    "where x.flag",
    "select count(*), sum(f.v + u.id) from jk_fact f join jk_dimu u on f.u32 = u.id "
    "where u.id > 100",
    "select count(*), sum(f.v + p.a) from jk_fact f join jk_pairs p on f.k64 = p.a "
    "and f.k32 = p.b where p.a > -4000",
    "select count(*), count(e.id), sum(f.v) from jk_fact f join jk_dim64 d on f.k64 = d.id "
    "left join jk_dim32 e on f.k32 = e.id and e.flag where d.tag = 'a'",
    "select count(*), sum(f.v) from jk_fact f join jk_sparse s on f.k64 = s.id where s.id <> 0",
    "select count(*), sum(f.v) from jk_fact f join jk_dim64 d on f.k64 = d.id "
    "join jk_dimd x on f.d = x.dd join jk_dimu u on f.u32 = u.id where d.tag in ('a', 'b') "
    "and x.flag",
    "select f.k64, count(*) from jk_fact f join jk_dim64 d on f.k64 = d.id "
    "where d.id between -100 and 100 group by f.k64 order by f.k64",
]


@pytest.mark.parametrize("sql", JOIN_KEYS)
@pytest.mark.parametrize("workers", [0, 2])
def test_joins_filtering_probe_rows_by_build_keys_match_duckdb(join_keys, sql, workers,
                                                               tmp_path):
    """Inner and semi joins drop the probe rows whose key their build side lacks before any join
    sees them: by keys of every integer width, dates and unsigned, with NULLs on both sides, an
    empty build side, two keys, a chain of three, and a set too sparse to filter. Anti and
    outer joins keep their rows. Each matches DuckDB, in one process and on two workers."""
    sluice, con = join_keys
    assert_matches_duckdb(sluice, con, sql, tmp_path, "--workers", str(workers))


@pytest.fixture(scope="module")
def float_keys(tpch):
    """Float keys holding 0.0 and -0.0, NaNs of two bit patterns (a negated NaN) and NULL, as
    float64 and float32: SQL groups and joins -0.0 with 0.0 and NaN with NaN, where hashing the
    bits kept them apart."""
    sluice, con, root = tpch
    nan, neg_nan = float("nan"), -float("nan")
    z = pa.table({
        "i": pa.array(range(1, 9), pa.int64()),
        "x": pa.array([0.0, -0.0, 1.5, None, nan, neg_nan, -0.0, 2.5], pa.float64()),
        "x32": pa.array([-0.0, 0.0, 1.5, None, neg_nan, nan, 0.0, 2.5], pa.float32())})
    w = pa.table({
        "y": pa.array([-0.0, 1.5, nan, None], pa.float64()),
        "n": pa.array([0, 1, 2, 3], pa.int32())})
    register_parquet_tables(sluice, con, root / "data", 1000, {"fk_z": z, "fk_w": w})
    return sluice, con


FLOAT_KEYS = [
    "select x, count(*) from fk_z group by x order by x",
    "select x32, count(*), sum(i) from fk_z group by x32 order by x32",
    "select count(distinct x), count(distinct x32) from fk_z",
    "select distinct x from fk_z order by x",
    "select z.i, w.y, z.x from fk_z z join fk_w w on z.x = w.y order by z.i",
    # The sign of a zero shows in its text: the join matched a copy of the key, not the key.
    "select z.i, cast(w.y as varchar) like '-%' as wy, cast(z.x as varchar) like '-%' as zx "
    "from fk_z z join fk_w w on z.x = w.y where z.x = 0 order by z.i",
    "select z.i, w.y from fk_z z join fk_w w on z.x32 = w.y order by z.i",
    "select z.i from fk_z z left join fk_w w on z.x = w.y where w.y is null order by z.i",
    "select i from fk_z where x in (select y from fk_w) order by i",
    "select i from fk_z where x not in (select y from fk_w where y is not null) order by i",
    "select x from fk_z intersect select y from fk_w",
    "select x from fk_z except select y from fk_w",
    "select i, x, count(*) over (partition by x) as c from fk_z order by i",
    "select i, rank() over (order by x) as r from fk_z order by i",
    "select i, count(*) over (partition by x32 order by i) as c from fk_z order by i",
]


@pytest.mark.parametrize("sql", FLOAT_KEYS)
@pytest.mark.parametrize("workers", [0, 2])
def test_float_keys_group_and_join_as_sql_compares_them(float_keys, sql, workers, tmp_path):
    """GROUP BY, DISTINCT, joins, IN, set operations and window partitions over -0.0, 0.0 and
    NaNs of two bit patterns give DuckDB's rows; a join still outputs -0.0 where its key had it."""
    sluice, con = float_keys
    assert_matches_duckdb(sluice, con, sql, tmp_path, "--workers", str(workers))


@pytest.fixture(scope="module")
def unsigned_keys(tpch):
    """uint64 values past 2^63 beside signed ones, and an int64 past 2^53 beside doubles: Arrow
    compares uint64 with a signed integer as int64, and an int64 with a double after a checked
    cast, and both failed."""
    sluice, con, root = tpch
    a = pa.table({
        "u": pa.array([1, 2**63 + 5, 2**64 - 1, 7, None], pa.uint64()),
        "i": pa.array([1, 2**53 + 1, -3, 7, None], pa.int64()),
        "u32": pa.array([1, 2**32 - 1, 7, 0, None], pa.uint32())})
    b = pa.table({
        "s": pa.array([1, -5, 2**62, 7, None], pa.int64()),
        "d": pa.array([1.0, 2.0**53, -3.0, 7.5, None], pa.float64()),
        "uu": pa.array([2**63 + 5, 2**64 - 1, 1, 7, None], pa.uint64()),
        "i32": pa.array([1, -1, 7, 0, None], pa.int32())})
    register_parquet_tables(sluice, con, root / "data", 1000, {"uk_a": a, "uk_b": b})
    return sluice, con


UNSIGNED_KEYS = [
    "select u from uk_a where u = 1",
    "select u from uk_a where u > 5 order by u",
    "select u from uk_a where u > -1 order by u",
    "select u from uk_a where u <> i order by u",
    "select u from uk_a where u between -5 and 9223372036854775813 order by u",
    "select u from uk_a where u in (1, 9223372036854775813, 18446744073709551615) order by u",
    "select u from uk_a where u in (1, -2, 7) order by u",
    "select u, u in (-1, -2) as neg from uk_a order by u",
    "select u from uk_a where u not in (1, -2) order by u",
    "select a.u, b.s from uk_a a join uk_b b on a.u = b.s order by a.u",
    "select a.u32, b.uu from uk_a a join uk_b b on a.u32 = b.uu order by a.u32",
    "select a.u, b.uu from uk_a a join uk_b b on a.u = b.uu order by a.u",
    "select a.i, b.d from uk_a a join uk_b b on a.i = b.d order by a.i",
    "select i from uk_a where i in (select d from uk_b) order by i",
    "select d from uk_b where d in (select i from uk_a) order by d",
    "select u from uk_a where u in (select s from uk_b) order by u",
    "select s from uk_b where s in (select u from uk_a) order by s",
    "select u32 from uk_a where u32 in (select uu from uk_b) order by u32",
    # Aggregated, so that --workers 2 runs it on workers: the rounding cast travels in the plan.
    "select count(*), sum(i) from uk_a where i in (select d from uk_b)",
    "select count(*), sum(d) from uk_b where d in (select i from uk_a)",
    # Correlations of a uint64 with a signed column decorrelate as any column = outer column.
    "select a.i from uk_a a where exists (select 1 from uk_b b where b.uu = a.i) order by a.i",
    "select a.i from uk_a a where not exists (select 1 from uk_b b where b.uu = a.i) "
    "order by a.i",
    "select a.i, (select count(*) from uk_b b where b.s = a.u) as c from uk_a a order by a.i",
    "select count(*) from uk_a where u = i",
    "select u, u > i as g, i <= u as h from uk_a order by u",
    # An integer beside a double anywhere else (a WHERE, BETWEEN, an IN list, CASE, COALESCE,
    # NULLIF, GREATEST, CAST, arithmetic) is its nearest double too, never a failed cast.
    "select u from uk_a where u > 1e19 order by u",
    "select u from uk_a where u between 1e18 and 2e19 order by u",
    "select a.i, b.d from uk_a a, uk_b b where a.i = b.d + 0 order by a.i",
    "select a.i, b.d, a.i < b.d as lt, a.i <> b.d as ne from uk_a a, uk_b b "
    "order by a.i nulls first, b.d nulls first",
    "select a.i from uk_a a, uk_b b where a.i between b.d and b.d + 1 order by a.i",
    "select a.i from uk_a a, uk_b b where a.i in (b.d, 2.5e0) order by a.i",
    "select coalesce(a.i, b.d) as c, nullif(a.i, b.d) as n, greatest(a.i, b.d) as g, "
    "case when b.d > 0 then a.i else b.d end as w from uk_a a, uk_b b "
    "order by a.i nulls first, b.d nulls first",
    "select i, cast(i as double) as c, i + 0.5e0 as h, cast(u as real) as r from uk_a "
    "order by i nulls first",
    "select avg(i), stddev(i), sum(cast(i as double)) from uk_a",
    "select a.i from uk_a a where exists (select 1 from uk_b b where b.d = a.i) order by a.i",
    "select a.i, (select count(*) from uk_b b where b.d = a.i) as c from uk_a a "
    "order by a.i nulls first",
    # A uint64 beside a signed integer in arithmetic, CASE, COALESCE, NULLIF, GREATEST and UNION
    # meets it in a type that holds both (DuckDB's HUGEINT), and a literal that is not negative
    # is a uint64.
    "select u, u + i as s, u - i as d, i - u as e, u * i32 as p from uk_a a, uk_b b "
    "order by u nulls first, i32 nulls first",
    "select u, u - 1 as m, u * 1 as n from uk_a where u > 0 order by u",
    "select coalesce(u, i) as c, coalesce(u, 0) as z, nullif(u, i) as n, greatest(u, i) as g, "
    "least(u, i) as l, case when i > 0 then u else i end as w from uk_a order by u nulls first",
    "select u from uk_a union all select s from uk_b order by 1 nulls first",
    "select u from uk_a union select uu from uk_b order by 1 nulls first",
    "select u32 from uk_a union all select i32 from uk_b order by 1 nulls first",
    "select sum(u + i) as s, max(coalesce(u, i)) as m from uk_a",
    # A literal that does not fit the column's type widens it; a product keeps the uint64 whole.
    "select u, u * -1 as n, u * (i - i) as z, coalesce(u32, 5000000000) as c, "
    "greatest(u32, -1) as g, least(u32, 4294967296) as l, "
    "case when u32 > 5 then u32 else 4294967296 end as w from uk_a order by u nulls first",
]


@pytest.mark.parametrize("sql", UNSIGNED_KEYS)
@pytest.mark.parametrize("workers", [0, 2])
def test_uint64_and_int64_past_2_53_compare_and_join_as_duckdb(unsigned_keys, sql, workers,
                                                              tmp_path):
    """Comparisons, BETWEEN, IN lists, joins, correlations and IN (subquery) of a uint64 beside
    signed integers hold past 2^63, and an int64 beside a double compares as a double: DuckDB's
    rows, in one process and on two workers."""
    sluice, con = unsigned_keys
    assert_matches_duckdb(sluice, con, sql, tmp_path, "--workers", str(workers))


@pytest.fixture(scope="module")
def big_sums(tpch):
    """Integers whose sums come near or past 64 bits. b alternates +5e18, +5e18, -5e18 - m,
    -5e18 - m: a group's running total passes 2^63 and comes back, and each row group of 1,200
    rows (a multiple of the period 12 of b and k) totals little. g makes 50 groups (more than
    the 32 that the sum keeps in registers) of four rows at a time. u's total for one k passes
    2^63 and fits in uint64; its total over all rows does not."""
    sluice, con, root = tpch
    n = 4800
    table = pa.table({
        "k": pa.array([j % 3 for j in range(n)], pa.int32()),
        "b": pa.array([5 * 10**18 if j % 4 < 2 else -5 * 10**18 - j % 1000 for j in range(n)],
                      pa.int64()),
        "u": pa.array([None if j % 97 == 0 else 10**16 for j in range(n)], pa.uint64()),
        "i": pa.array([2_000_000_000 - j for j in range(n)], pa.int32()),
        "t": pa.array([j % 128 - 64 for j in range(n)], pa.int8()),
        "g": pa.array([j // 4 % 50 for j in range(n)], pa.int64())})
    register_parquet_tables(sluice, con, root / "data", 1200, {"big_sums": table})
    return sluice, con


# Sums of integers are exact: a total that passes 2^63 on its way and comes back is right, an
# int32's total past 2^31 is an int64, and a uint64's total may pass 2^63.
BIG_SUMS = [
    "select k, sum(b), sum(i), sum(t), count(*) from big_sums group by k order by k",
    "select sum(b), sum(i), sum(t) from big_sums",
    "select sum(u) from big_sums where k = 0",
    "select k, sum(u) from big_sums where k < 2 group by k order by k",
    "select k, avg(b), avg(i) from big_sums group by k order by k",
    # avg's total may pass 64 bits: only sum() must fit its type.
    "select k, avg(b), avg(u), sum(i) from big_sums where b > 0 group by k order by k",
    "select avg(u), avg(b) filter (where b > 0), count(*) from big_sums",
    # Windows: prefix sums in 128 bits; avg's as a decimal; a uint64 past 2^63.
    "select k, i, avg(b) over (partition by k) as a, "
    "sum(u) over (partition by k order by i rows between 3 preceding and current row) as s "
    "from big_sums where i > 1999999000 order by k, i",
    "select k, sum(b) over (partition by k) as s, avg(b) over (partition by k order by i "
    "rows between 1 preceding and current row) as m from big_sums order by k, i",
    "select g, sum(b), sum(t) from big_sums group by g order by g",
    "select t, sum(i) from big_sums group by t order by t",
    "select sum(distinct i), sum(distinct t) from big_sums",
]


@pytest.mark.parametrize("sql", BIG_SUMS)
@pytest.mark.parametrize("workers", [0, 2])
def test_integer_sums_near_64_bits_are_exact_as_duckdb(big_sums, sql, workers, tmp_path):
    sluice, con = big_sums
    assert_matches_duckdb(sluice, con, sql, tmp_path, "--workers", str(workers))


# Where a total does not fit its type, the query fails naming the sum; Arrow's sum wrapped
# (a sum of positive values came out negative). DuckDB sums in 128 bits and gives the total.
BIG_SUM_OVERFLOWS = [
    ("select sum(b) from big_sums where b > 0", "sum(b)", "int64"),
    ("select k, sum(b) from big_sums where b > 0 group by k", "sum(b)", "int64"),
    ("select k, sum(b) from big_sums where b < 0 group by k", "sum(b)", "int64"),
    ("select sum(u) from big_sums", "sum(u)", "uint64"),
    ("select k, sum(b + 1) from big_sums where b > 0 group by k", "sum(b + 1)", "int64"),
    ("select sum(distinct b) from big_sums", "sum(", "int64"),
    ("select sum(b) over (partition by k order by i rows between 1 preceding and current row) "
     "from big_sums", "sum over a window", "int64"),
]


@pytest.mark.parametrize("sql,label,type_name", BIG_SUM_OVERFLOWS)
@pytest.mark.parametrize("workers", [0, 2])
def test_an_integer_sum_past_its_type_fails_naming_the_sum(big_sums, sql, label, type_name,
                                                           workers, tmp_path):
    sluice, con = big_sums
    if workers:
        plan = sluice.run("query", "--workers", "2", "explain " + sql, check=True).stdout.decode()
        assert "stage 1 (map): 2 tasks" in plan, plan
    out = tmp_path / "result.csv"
    proc = sluice.run("query", "--workers", str(workers), "-o", out, sql)
    err = proc.stderr.decode()
    assert proc.returncode != 0, sql
    assert f"overflow in {label}" in err and f"does not fit in {type_name}" in err, err
    assert not out.exists()


@pytest.fixture(scope="module")
def null_keys(tpch):
    """Join keys with NULLs on both sides: 3,000 facts in three row groups, 40 dimension rows."""
    sluice, con, root = tpch
    n = 3000
    facts = pa.table({
        "k": pa.array([None if j % 7 == 0 else j % 37 for j in range(n)], pa.int64()),
        "s": pa.array([None if j % 5 == 0 else ["a", "b", "c"][j % 3] for j in range(n)]),
        "v": pa.array(list(range(n)), pa.int64())})
    dims = pa.table({
        "dk": pa.array([None if j % 9 == 0 else j for j in range(40)], pa.int32()),
        "ds": pa.array([None if j % 4 == 0 else ["a", "b", "z"][j % 3] for j in range(40)]),
        "w": pa.array([j * 10 for j in range(40)], pa.int64())})
    register_parquet_tables(sluice, con, root / "data", 1000, {"nk_facts": facts, "nk_dims": dims})
    return sluice, con


# IS NOT DISTINCT FROM between two sides is a join key that matches NULL with NULL, in inner,
# outer and comma joins, alone or beside other conditions; beside an equality it is a filter.
NULL_EQUAL_JOINS = [
    "select count(*), sum(v), sum(w) from nk_facts join nk_dims on k is not distinct from dk",
    "select k, count(*), sum(w) from nk_facts left join nk_dims on k is not distinct from dk "
    "group by k order by k nulls first",
    "select k, dk, count(*) from nk_facts full join nk_dims on k is not distinct from dk "
    "group by k, dk order by k nulls first, dk nulls first",
    "select count(*), sum(w) from nk_facts f, nk_dims d "
    "where f.k is not distinct from d.dk and f.s is not distinct from d.ds",
    "select s, count(*), sum(w) from nk_facts join nk_dims "
    "on k is not distinct from dk and s is not distinct from ds group by s order by s nulls first",
    "select count(*) from nk_facts join nk_dims on k is not distinct from dk and v < w",
    "select count(*) from nk_facts join nk_dims on k = dk and s is not distinct from ds",
    "select count(*) from nk_facts right join nk_dims on k + 1 is not distinct from dk + 1",
    "select count(*) from nk_facts where k is not distinct from 3 or s is not distinct from null",
]


@pytest.mark.parametrize("sql", NULL_EQUAL_JOINS)
@pytest.mark.parametrize("workers", [0, 2])
def test_is_not_distinct_from_joins_match_nulls_as_duckdb(null_keys, sql, workers, tmp_path):
    sluice, con = null_keys
    assert_matches_duckdb(sluice, con, sql, tmp_path, "--workers", str(workers))


def test_is_not_distinct_from_is_a_null_equal_hash_join_key(null_keys):
    sluice, con = null_keys
    plan = sluice.run("query", "explain select count(*) from nk_facts left join nk_dims "
                      "on k is not distinct from dk", check=True).stdout.decode()
    assert "HashJoin left on k#" in plan and "(NULLs equal)" in plan, plan


def test_a_distinct_count_of_floats_leaves_the_columns_other_aggregates_alone(float_keys):
    """count(DISTINCT x) counts -0.0 and 0.0 as one value, and min(x) beside it still finds
    -0.0 (its text shows the sign). In one process: under --workers the distinct values are
    grouping keys, and a group of -0.0 shows 0.0."""
    sluice, con = float_keys
    sql = ("select count(distinct x) as n, cast(min(x) as varchar) like '-%' as neg "
           "from fk_z where i in (2, 7)")
    proc = sluice.run("query", "--format", "csv", sql, check=True)
    assert proc.stdout.decode().splitlines()[1:] == ["1,true"], proc.stdout.decode()
    assert con.execute(sql).fetchall() == [(1, True)]
