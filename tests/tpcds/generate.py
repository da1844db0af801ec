"""Writes tests/tpcds/qNN.sql: the 99 TPC-DS queries, from the official templates and `dsqgen` that
the `benchbox` package ships, with the qualification parameters of the specification (TPC-DS
4.0.0, Appendix B), which benchbox also ships, audited, in
core/tpcds/dataframe_queries/qualification_values.json.

    .venv/bin/pip install --no-deps benchbox==0.4.2   # see scripts/requirements.txt
    .venv/bin/python tests/tpcds/generate.py

This is what benchbox's DSQGenBinary.generate_with_parameters() does, without importing benchbox
(whose own dependencies cap pyarrow below the 26 we pin): each template's [NAME.k] tokens are
replaced by the Appendix B values, in a staged copy of the templates (dsqgen overruns a buffer on
long -DIRECTORY paths), and then, once per template,

    dsqgen -DIRECTORY q -TEMPLATE queryN.tpl -DIALECT netezza -SCALE 1 -RNGSEED 1 -FILTER Y -QUIET Y

Every substitution a template uses is given, so the seed changes nothing (--check-seed shows it).
dsqgen's own -QUALIFY Y does not give the Appendix B values (Q1 sums SR_FEE, not SR_RETURN_AMT).

The netezza dialect puts `limit N` at the end (ansi writes `select top N`, which PostgreSQL does not
parse). One rewrite follows, to PostgreSQL's grammar: the templates' `date + 30 days` becomes
`date + interval '30 days'`. Nothing else changes. A template that yields two statements (14, 23,
24, 39) is written as qNNa.sql and qNNb.sql, one statement each."""

import hashlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DIALECT = "netezza"
NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\.(\d+)$")


def benchbox_dir():
    spec = importlib.util.find_spec("benchbox")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("benchbox is not installed: .venv/bin/pip install --no-deps benchbox==0.4.2")
    return Path(list(spec.submodule_search_locations)[0])


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def qualification_values(bb, templates):
    """Appendix B's values per query, checked against benchbox's audit receipt, as are the
    templates."""
    inputs = json.loads((bb / "core/tpcds/qualification/inputs.json").read_text())
    path = bb / "core/tpcds/dataframe_queries/qualification_values.json"
    if sha256(path) != inputs["parameters_sha256"]:
        sys.exit(f"{path} differs from the audited Appendix B values")
    for name, digest in inputs["templates"].items():
        if sha256(templates / name) != digest:
            sys.exit(f"template {name} differs from the audited one")
    return json.loads(path.read_text())["values"]


def substitute(template, values, n):
    """[NAME.k] (and [NAME] for k = 1) replaced by the given value, as benchbox does."""
    for key, value in values.items():
        name, k = NAME.match(key).groups()
        pats = [rf"\[{re.escape(name)}\.{int(k)}\]"] + ([rf"\[{re.escape(name)}\]"] if int(k) == 1 else [])
        template, count = re.subn("|".join(pats), lambda _m, v=str(value): v, template)
        if count == 0 and not re.search(rf"\bdefine\s+{re.escape(name)}\s*=", template):
            sys.exit(f"query{n}.tpl has no substitution {key}")
    return template


def to_postgres(sql):
    # `+ 30 days` / `- 30 days` (netezza, DB2) is an interval literal in PostgreSQL's spelling
    return re.sub(r"([+-])\s*(\d+)\s+days\b", r"\1 interval '\2 days'", sql)


def statements(text):
    """dsqgen's output split into its statements, each without the trailing semicolon."""
    return [p.strip() for p in text.split(";") if p.strip()]


def generate(seed=1):
    bb = benchbox_dir()
    tools = bb / "_binaries" / "tpc-ds"
    dsqgen = tools / "linux-x86_64" / "dsqgen"
    templates = tools / "templates" / "query_templates"
    values = qualification_values(bb, templates)
    queries = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(templates, work / "q")
        shutil.copy(tools / "linux-x86_64" / "tpcds.idx", work / "tpcds.idx")
        for n in range(1, 100):
            tpl = work / "q" / f"query{n}.tpl"
            tpl.write_text(substitute(tpl.read_text(), values[str(n)], n))
            cmd = [str(dsqgen), "-DIRECTORY", "q", "-TEMPLATE", tpl.name, "-DIALECT", DIALECT,
                   "-SCALE", "1", "-RNGSEED", str(seed), "-FILTER", "Y", "-QUIET", "Y"]
            out = subprocess.run(cmd, cwd=work, capture_output=True, text=True, check=True,
                                 env={"DSS_QUERY": str(work), "PATH": "/usr/bin:/bin"}).stdout
            queries[n] = [to_postgres(s) for s in statements(out)]
    return queries


def main():
    if "--check-seed" in sys.argv:
        a, b = generate(1), generate(2)
        diff = [n for n in a if a[n] != b[n]]
        print("queries that depend on the seed:", diff or "none")
        sys.exit(1 if diff else 0)
    written = []
    for n, stmts in generate().items():
        names = [f"q{n:02d}.sql"] if len(stmts) == 1 else \
            [f"q{n:02d}{chr(ord('a') + i)}.sql" for i in range(len(stmts))]
        for i, (name, sql) in enumerate(zip(names, stmts)):
            part = f", statement {i + 1} of {len(stmts)}" if len(stmts) > 1 else ""
            header = (f"-- TPC-DS Q{n}{part}: query{n}.tpl with the qualification parameters "
                      f"(Appendix B), dsqgen -DIALECT {DIALECT}; made by tests/tpcds/generate.py\n")
            body = "\n".join(line.rstrip() for line in sql.splitlines())
            (HERE / name).write_text(header + body + "\n")
            written.append(name)
    for old in HERE.glob("q*.sql"):
        if old.name not in written:
            old.unlink()
    print(f"wrote {len(written)} files in {HERE}")


if __name__ == "__main__":
    main()
