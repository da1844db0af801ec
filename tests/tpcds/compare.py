"""Runs the TPC-DS queries of tests/tpcds/ through `sluice query` (in-process, default workers) and
through DuckDB on the same Parquet files, and prints one line per query:

    PASS | FAIL(<how it differs>) | ERROR(<first line of sluice's error>) | TIMEOUT | ORACLE-ERROR(...)

then the totals. Data: `tpcgen-cli tpcds parquet -s 0.1 --output-dir DIR` (a file or a folder per
table). Usage:

    .venv/bin/python tests/tpcds/compare.py --data /tmp/tpcds01 [--sluice build/sluice]
        [--timeout 60] [--only q01,q14a] [--json results.json]

DuckDB is run with PostgreSQL's rules where a setting gives them: NULLs sort last ascending and
first descending. Where a query divides integers, DuckDB is also run with integer_division on
(PostgreSQL's `int / int` truncates; DuckDB's is a double); if that changes DuckDB's answer, sluice
is checked against the PostgreSQL rule and the line says so ("[pg: integer division]").

Comparison: floats and decimals to a relative 1e-6, NULLs equal. Rows as a multiset, unless the
outermost query has ORDER BY: then, where every ORDER BY key is an output column, the keys must
come in DuckDB's order and rows with equal keys may come in any order (with LIMIT, the tied rows
at the cut may be any of them); where some key is not an output column, the rows must come in
DuckDB's order exactly."""

import argparse
import datetime
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import duckdb
import pyarrow as pa

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from conftest import base_env  # noqa: E402  the e2e tests' isolated environment for the binary
from test_sql import normalize  # noqa: E402  Decimal -> float, as the TPC-H comparison does

REL_TOL = 1e-6
ABS_TOL = 1e-9

# Spellings DuckDB's parser refuses where PostgreSQL's accepts them, changed in DuckDB's copy only:
# Q90 names a derived table `at` (non-reserved in PostgreSQL, reserved in DuckDB).
DUCKDB_TEXT = {"q90": [(r"\)\s*at\s*,", ') "at",')]}


# ---------------------------------------------------------------------------------------------
# the tables

def tables(data):
    """{table: (sluice LOCATION, DuckDB read_parquet glob)} for a file or a folder per table."""
    found = {}
    for p in sorted(data.iterdir()):
        if p.is_file() and p.suffix == ".parquet":
            found[p.stem] = (p.name, str(p))
        elif p.is_dir() and any(p.glob("*.parquet")):
            found[p.name] = (p.name, str(p / "*.parquet"))
    return found


class SluiceRunner:
    def __init__(self, binary, data, home, timeout, max_rss_gb):
        self.binary, self.timeout, self.max_rss = str(binary), timeout, max_rss_gb * 2**30
        self.env = base_env(home)
        self.env["SLUICE_STORE"] = f"file://{data}"

    def run(self, *args, timeout=None):
        """(returncode or 'TIMEOUT' or 'MEMORY', stderr, seconds). The process is killed past the
        timeout or past max_rss (resident memory, polled), so a runaway plan cannot take the
        machine."""
        start = time.monotonic()
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen([self.binary, *map(str, args)], stdout=subprocess.DEVNULL,
                                    stderr=err, env=self.env, start_new_session=True)
            status = None
            while True:
                try:
                    rc = proc.wait(timeout=0.05)
                    status = rc
                    break
                except subprocess.TimeoutExpired:
                    pass
                if time.monotonic() - start > (timeout or self.timeout):
                    status = "TIMEOUT"
                elif rss(proc.pid) > self.max_rss:
                    status = "MEMORY"
                if status is not None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    break
            err.seek(0)
            return status, err.read().decode(errors="replace"), time.monotonic() - start


def rss(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def first_error_line(stderr):
    lines = [l for l in stderr.strip().splitlines() if l.strip()]
    if not lines:
        return "no message"
    line = next((l for l in lines if "error" in l.lower()), lines[0])
    return re.sub(r"^sluice: error: ", "", line.strip())


# ---------------------------------------------------------------------------------------------
# the SQL text: the outermost ORDER BY and LIMIT

def strip_comments_and_strings(sql):
    """The text with comments removed and string literals replaced by '' (quoted identifiers are
    kept), so that keywords and parentheses can be found."""
    out, i, n = [], 0, len(sql)
    while i < n:
        if sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif sql[i] == "'":
            j = i + 1
            while j < n and not (sql[j] == "'" and not sql.startswith("''", j)):
                j += 2 if sql.startswith("''", j) else 1
            out.append("''")
            i = j + 1
        else:
            out.append(sql[i])
            i += 1
    return "".join(out)


def split_top(text, sep=","):
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts]


def outer_order_by(sql):
    """(ORDER BY keys as text, LIMIT or None) of the outermost query; keys is None without one."""
    text = strip_comments_and_strings(sql)
    depth, top = 0, []
    for ch in text:  # the text at parenthesis depth 0, inner text blanked
        if ch == "(":
            depth += 1
            top.append("(")
            continue
        if ch == ")":
            depth -= 1
        top.append(ch if depth == 0 else " ")
    flat = "".join(top)
    limit = None
    m = re.search(r"\blimit\s+(\d+)\s*$", flat, re.I)
    if m:
        limit = int(m.group(1))
    orders = list(re.finditer(r"\border\s+by\b", flat, re.I))
    if not orders:
        return None, limit
    start = orders[-1].end()
    end = m.start() if m else len(text)
    keys = []
    for key in split_top(text[start:end]):
        key = re.sub(r"\s+nulls\s+(first|last)\s*$", "", key, flags=re.I)
        key = re.sub(r"\s+(asc|desc)\s*$", "", key, flags=re.I)
        keys.append(key.strip())
    return keys, limit


def key_columns(keys, names):
    """Output column positions of the ORDER BY keys, or None where some key is not an output
    column (an expression, or a column not selected)."""
    lower = [n.lower() for n in names]
    cols = []
    for key in keys:
        k = key.strip()
        if re.fullmatch(r"\d+", k):
            cols.append(int(k) - 1)
            continue
        m = re.fullmatch(r'(?:[A-Za-z_][\w$]*\.)?("[^"]+"|[A-Za-z_][\w$]*)', k)
        if not m:
            if k.lower() in lower:  # DuckDB names an unaliased expression by its text
                cols.append(lower.index(k.lower()))
                continue
            return None
        name = m.group(1)
        name = name[1:-1] if name.startswith('"') else name.lower()
        if lower.count(name.lower()) != 1:
            return None
        cols.append(lower.index(name.lower()))
    return cols


# ---------------------------------------------------------------------------------------------
# comparing rows

def same(a, b):
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) \
            and not isinstance(a, bool) and not isinstance(b, bool):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=ABS_TOL)
    if isinstance(a, datetime.datetime) != isinstance(b, datetime.datetime):
        # a date against a timestamp at midnight (date + interval is a timestamp in both)
        da = a.date() if isinstance(a, datetime.datetime) and a.time() == datetime.time() else a
        db = b.date() if isinstance(b, datetime.datetime) and b.time() == datetime.time() else b
        return da == db
    return a == b


def same_row(a, b):
    return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))


def sort_key(row):
    def k(v):
        if v is None:
            return (0, "")
        if isinstance(v, bool):
            return (1, float(v))
        if isinstance(v, (int, float)):
            return (1, float(f"{float(v):.5g}")) if math.isfinite(v) else (1, float("inf"))
        if isinstance(v, str):
            return (2, v)
        if isinstance(v, (datetime.date, datetime.datetime)):
            return (3, v.isoformat()[:10])
        return (4, repr(v))
    return tuple(k(v) for v in row)


def same_multiset(ours, want):
    if len(ours) != len(want):
        return False
    a, b = sorted(ours, key=sort_key), sorted(want, key=sort_key)
    if all(same_row(x, y) for x, y in zip(a, b)):
        return True
    if len(ours) > 3000:
        return False
    # values within the tolerance can sort apart: match each row to any unused equal row
    unused = list(b)
    for row in a:
        for i, cand in enumerate(unused):
            if same_row(row, cand):
                del unused[i]
                break
        else:
            return False
    return True


def first_difference(ours, want):
    a, b = sorted(ours, key=sort_key), sorted(want, key=sort_key)
    for i, (x, y) in enumerate(zip(a, b)):
        if not same_row(x, y):
            return f"sorted row {i}: sluice {short(x)} vs DuckDB {short(y)}"
    return f"{len(ours)} rows vs DuckDB {len(want)}"


def short(row, width=160):
    s = repr(tuple(row))
    return s if len(s) <= width else s[:width] + "...)"


def compare(ours, want, sql, names):
    """None where ours matches DuckDB's rows, else what differs."""
    if want and ours and len(ours[0]) != len(want[0]):
        return f"{len(ours[0])} columns vs DuckDB {len(want[0])}"
    keys, limit = outer_order_by(sql)
    if len(ours) != len(want):
        return f"{len(ours)} rows vs DuckDB {len(want)}"
    if keys is None:
        return None if same_multiset(ours, want) else first_difference(ours, want)
    cols = key_columns(keys, names)
    if cols is None:
        if all(same_row(x, y) for x, y in zip(ours, want)):
            return None
        if same_multiset(ours, want):
            return "same rows, another order (ORDER BY keys are not all output columns: ties?)"
        return first_difference(ours, want)
    project = lambda r: tuple(r[c] for c in cols)  # noqa: E731
    for i, (x, y) in enumerate(zip(ours, want)):
        if not same_row(project(x), project(y)):
            if same_multiset(ours, want):
                return f"same rows, another order: row {i} keys {short(project(x))} vs {short(project(y))}"
            return f"row {i}: sluice {short(x)} vs DuckDB {short(y)}"
    # groups of equal keys: any order inside, and at a LIMIT cut, any of the tied rows
    i = 0
    while i < len(want):
        j = i + 1
        while j < len(want) and same_row(project(want[j]), project(want[i])):
            j += 1
        cut = limit is not None and j == len(want) == limit
        if not cut and not same_multiset(ours[i:j], want[i:j]):
            return f"rows {i}..{j - 1} (equal ORDER BY keys): " + first_difference(ours[i:j], want[i:j])
        i = j
    return None


# ---------------------------------------------------------------------------------------------
# DuckDB

class Duck:
    def __init__(self, found, timeout):
        self.con = duckdb.connect()
        self.timeout = timeout
        self.con.execute("set default_null_order = 'nulls_last_on_asc_first_on_desc'")
        for t, (_, glob) in found.items():
            self.con.execute(f"create view {t} as select * from read_parquet('{glob}')")

    def run(self, sql, integer_division=False):
        """(names, rows) or raises."""
        self.con.execute(f"set integer_division = {'true' if integer_division else 'false'}")
        timer = threading.Timer(self.timeout, self.con.interrupt)
        timer.start()
        try:
            cur = self.con.execute(sql)
            names = [d[0] for d in cur.description]
            rows = [tuple(normalize(v) for v in r) for r in cur.fetchall()]
        finally:
            timer.cancel()
        return names, rows


DIVISION_BY_ZERO = object()  # the expected answer where PostgreSQL raises "division by zero"


def divides_integers_maybe(sql):
    return "/" in strip_comments_and_strings(sql)


# ---------------------------------------------------------------------------------------------

def check_query(name, sql, sluice, duck, out, timeout, max_rss_gb, workers=0):
    """One query through sluice (on `workers` worker processes; 0: in-process) and DuckDB: a
    dict with "status" (PASS, FAIL, ERROR, TIMEOUT or ORACLE-ERROR), "detail", "seconds", and
    what the oracle said."""
    res = {"query": name}
    duck_sql = sql
    for pattern, repl in DUCKDB_TEXT.get(name, []):
        duck_sql = re.sub(pattern, repl, duck_sql)
    names = want = None
    try:
        names, want = duck.run(duck_sql)
        res["duckdb_rows"] = len(want)
    except Exception as e:  # noqa: BLE001
        res["oracle_error"] = str(e).strip().splitlines()[0][:300]
    if want is not None and divides_integers_maybe(sql):
        try:
            _, want_i = duck.run(duck_sql, integer_division=True)
            if not (len(want) == len(want_i) and compare(want_i, want, sql, names) is None):
                res["pg_rule"] = "integer division"
                want = want_i
        except duckdb.Error as e:
            # DuckDB's `/` gives NULL or inf for x / 0; its integer division raises, as
            # PostgreSQL's `/` does for every type
            if "division by zero" in str(e).lower():
                res["pg_rule"] = "division by zero is an error"
                want = DIVISION_BY_ZERO
            else:
                res["oracle_error"] = "with integer_division: " + str(e).splitlines()[0][:250]
    if out.exists():
        out.unlink()
    status, err, secs = sluice.run("query", "--workers", workers, "--format", "arrow", "-o", out,
                                   sql)
    res["seconds"] = round(secs, 2)
    if status == "TIMEOUT":
        res["status"], res["detail"] = "TIMEOUT", f"> {timeout:g} s"
    elif status == "MEMORY":
        res["status"], res["detail"] = "ERROR", f"killed: resident memory > {max_rss_gb:g} GiB"
    elif want is DIVISION_BY_ZERO:
        if status != 0 and re.search(r"divi(de|sion) by zero", err, re.I):
            res["status"], res["detail"] = "PASS", ""
        elif status != 0:
            res["status"], res["detail"] = "ERROR", first_error_line(err)
        else:
            res["status"], res["detail"] = "FAIL", "rows where PostgreSQL raises division by zero"
    elif status != 0:
        res["status"], res["detail"] = "ERROR", first_error_line(err)
    elif want is None:
        res["status"], res["detail"] = "ORACLE-ERROR", res["oracle_error"]
    else:
        with pa.ipc.open_stream(out) as reader:
            table = reader.read_all()
        ours = [tuple(normalize(v) for v in r)
                for r in zip(*[c.to_pylist() for c in table.columns])]
        if table.num_columns == 0:
            ours = [()] * table.num_rows
        diff = compare(ours, want, sql, names)
        if diff is None and table.num_columns != len(names):
            diff = f"{table.num_columns} columns vs DuckDB {len(names)}"
        res["status"], res["detail"] = ("PASS", "") if diff is None else ("FAIL", diff)
        res["rows"] = len(ours)
    return res


def register_tables(sluice, found):
    for t, (location, _) in found.items():
        status, err, _ = sluice.run("query", f"CREATE EXTERNAL TABLE {t} STORED AS PARQUET "
                                    f"LOCATION '{location}'", timeout=120)
        if status != 0:
            raise RuntimeError(f"CREATE EXTERNAL TABLE {t} failed: {err.strip()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("/tmp/tpcds01"))
    ap.add_argument("--sluice", type=Path, default=ROOT / "build" / "sluice")
    ap.add_argument("--queries", type=Path, default=HERE)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--max-rss-gb", type=float, default=6)
    ap.add_argument("--only", help="comma-separated names, e.g. q01,q14a")
    ap.add_argument("--json", type=Path, help="write the results here too")
    args = ap.parse_args()

    data = args.data.resolve()
    found = tables(data)
    if not found:
        sys.exit(f"no Parquet tables in {data}")
    files = sorted(args.queries.glob("q*.sql"))
    if args.only:
        wanted = set(args.only.split(","))
        files = [f for f in files if f.stem in wanted]

    results = []
    with tempfile.TemporaryDirectory(prefix="sluice-tpcds-") as tmp:
        tmp = Path(tmp)
        sluice = SluiceRunner(args.sluice.resolve(), data, tmp / "home", args.timeout,
                              args.max_rss_gb)
        register_tables(sluice, found)
        duck = Duck(found, args.timeout)
        out = tmp / "result.arrow"
        for f in files:
            res = check_query(f.stem, f.read_text(), sluice, duck, out, args.timeout,
                              args.max_rss_gb)
            results.append(res)
            tag = res["status"] if not res["detail"] else f"{res['status']}({res['detail']})"
            note = f"  [pg: {res['pg_rule']}]" if "pg_rule" in res else ""
            if "oracle_error" in res and res["status"] != "ORACLE-ERROR":
                note += f"  [DuckDB failed: {res['oracle_error']}]"
            print(f"{f.stem:5} {tag}{note}  ({res['seconds']:.1f} s)", flush=True)

    counts = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    order = ["PASS", "FAIL", "ERROR", "TIMEOUT", "ORACLE-ERROR"]
    print(f"total: {len(results)} statements: " +
          ", ".join(f"{counts[k]} {k}" for k in order if k in counts))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
