"""CREATE EXTERNAL TABLE ... LOCATION takes what DataFusion's statement takes: a key of the store,
an absolute local path, a file:// URL or an s3:// URL; SLUICE_SQL_ROOTS limits what queries read.
Results are checked against DuckDB on the same files."""

import os
import subprocess

import duckdb
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from conftest import Sluice, aws_env, base_env, s3_store_url

SUM_SQL = "select g, count(*) as n, sum(v) as total from {t} group by g order by g"


def write_tables(dir_):
    """A directory of two Parquet parts, and a single file."""
    (dir_ / "parts").mkdir(parents=True)
    for i in range(2):
        pq.write_table(pa.table({"g": [f"g{(i + j) % 3}" for j in range(50)],
                                 "v": list(range(i * 50, i * 50 + 50))}),
                       dir_ / "parts" / f"part-{i}.parquet")
    pq.write_table(pa.table({"g": ["x", "y", "x"], "v": [1, 2, 3]}), dir_ / "one.parquet")


def rows(sluice, sql, **kw):
    out = sluice.run("query", "--format", "csv", sql, check=True, **kw).stdout.decode()
    return out.strip().splitlines()[1:]


def duck_rows(path, sql):
    con = duckdb.connect()
    con.execute(f"create view t as select * from read_parquet('{path}')")
    return [",".join(f'"{c}"' if isinstance(c, str) else str(c) for c in r)
            for r in con.execute(sql.format(t="t")).fetchall()]


@pytest.fixture
def local(sluice_bin, tmp_path):
    data = tmp_path / "data"
    write_tables(data)
    return Sluice(sluice_bin, base_env(tmp_path / "home")), data


def test_absolute_path_and_file_url(local):
    sluice, data = local
    out = sluice.run("query", f"CREATE EXTERNAL TABLE parts STORED AS PARQUET LOCATION "
                              f"'{data}/parts'", check=True).stdout.decode()
    assert out.startswith("CREATE EXTERNAL TABLE parts (2 files, 2 columns)")
    sluice.run("query", f"CREATE EXTERNAL TABLE one STORED AS PARQUET LOCATION "
                        f"'file://{data}/one.parquet'", check=True)
    # A trailing slash and a file:// directory work as well.
    sluice.run("query", f"CREATE EXTERNAL TABLE parts2 STORED AS PARQUET LOCATION "
                        f"'file://{data}/parts/'", check=True)
    expected = duck_rows(f"{data}/parts/*.parquet", SUM_SQL)
    assert rows(sluice, SUM_SQL.format(t="parts")) == expected
    assert rows(sluice, SUM_SQL.format(t="parts2")) == expected
    assert rows(sluice, SUM_SQL.format(t="one")) == duck_rows(f"{data}/one.parquet", SUM_SQL)


def test_store_keys_still_work(sluice_bin, tmp_path):
    data = tmp_path / "data"
    write_tables(data)
    env = base_env(tmp_path / "home")
    env["SLUICE_STORE"] = f"file://{data}"
    sluice = Sluice(sluice_bin, env)
    sluice.run("query", "CREATE EXTERNAL TABLE parts STORED AS PARQUET LOCATION 'parts'",
               check=True)
    assert rows(sluice, SUM_SQL.format(t="parts")) == duck_rows(f"{data}/parts/*.parquet",
                                                                  SUM_SQL)
    # A key still may not climb out of the store.
    proc = sluice.run("query", "CREATE EXTERNAL TABLE x STORED AS PARQUET LOCATION '../data/parts'")
    assert proc.returncode != 0
    assert "contains a '.' or '..' segment" in proc.stderr.decode()


def test_roots_refuse_and_allow(local, tmp_path):
    sluice, data = local
    other = tmp_path / "other"
    other.mkdir()
    roots = {"SLUICE_SQL_ROOTS": f"{other}, file://{data}/parts"}
    sluice.run("query", f"CREATE EXTERNAL TABLE parts STORED AS PARQUET LOCATION "
                        f"'{data}/parts'", check=True, env=roots)
    assert rows(sluice, "select count(*) from parts", env=roots) == ["100"]
    # A location outside every root: refused, naming the location and the setting.
    proc = sluice.run("query", f"CREATE EXTERNAL TABLE one STORED AS PARQUET LOCATION "
                               f"'{data}/one.parquet'", env=roots)
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert f"location '{data}/one.parquet'" in err and "SLUICE_SQL_ROOTS" in err, err
    # '..' is resolved before the check: it cannot climb out of an allowed root.
    escape = f"{data}/parts/../one.parquet"
    proc = sluice.run("query", f"CREATE EXTERNAL TABLE one STORED AS PARQUET LOCATION '{escape}'",
                      env=roots)
    assert proc.returncode == 1
    assert f"location '{escape}' ({data}/one.parquet) is outside the roots" in proc.stderr.decode()
    # A symlink inside a root that points outside it is resolved too.
    os.symlink(data / "one.parquet", other / "link.parquet")
    proc = sluice.run("query", f"CREATE EXTERNAL TABLE one STORED AS PARQUET LOCATION "
                               f"'{other}/link.parquet'", env=roots)
    assert proc.returncode == 1 and "outside the roots" in proc.stderr.decode()
    # A table declared before the roots were set is refused when read under them.
    sluice.run("query", f"CREATE EXTERNAL TABLE one STORED AS PARQUET LOCATION "
                        f"'{data}/one.parquet'", check=True)
    proc = sluice.run("query", "select * from one", env=roots)
    assert proc.returncode == 1 and "outside the roots" in proc.stderr.decode()
    # Without the setting, anything is readable.
    assert rows(sluice, "select count(*) from one") == ["3"]
    proc = sluice.run("query", "select 1", env={"SLUICE_SQL_ROOTS": "relative/dir"})
    assert proc.returncode == 1
    assert "SLUICE_SQL_ROOTS entry 'relative/dir' is not an absolute path" in proc.stderr.decode()


def test_s3_url(sluice_bin, tmp_path, moto_endpoint):
    data = tmp_path / "data"
    write_tables(data)
    store_url = s3_store_url(moto_endpoint, tmp_path)
    bucket = store_url[len("s3://"):].split("/", 1)[0]
    os.environ.update(aws_env())
    s3 = pafs.S3FileSystem(endpoint_override=moto_endpoint, scheme="http", region="us-east-1")
    for name in ("part-0.parquet", "part-1.parquet"):
        pafs.copy_files(str(data / "parts" / name), f"{bucket}/tables/parts/{name}",
                        destination_filesystem=s3)
    expected = duck_rows(f"{data}/parts/*.parquet", SUM_SQL)
    # The URL takes the store's endpoint settings when it has none of its own...
    env = base_env(tmp_path / "home")
    env["SLUICE_STORE"] = store_url
    sluice = Sluice(sluice_bin, env)
    sluice.run("query", f"CREATE EXTERNAL TABLE parts STORED AS PARQUET LOCATION "
                        f"'s3://{bucket}/tables/parts'", check=True)
    assert rows(sluice, SUM_SQL.format(t="parts")) == expected
    # ...and its own query parameters with a local store.
    local = Sluice(sluice_bin, base_env(tmp_path / "home2"))
    local.run("query", f"CREATE EXTERNAL TABLE parts STORED AS PARQUET LOCATION "
                       f"'s3://{bucket}/tables/parts?endpoint_override={moto_endpoint}"
                       f"&scheme=http&region=us-east-1'", check=True)
    assert rows(local, SUM_SQL.format(t="parts")) == expected
    # Roots apply to URLs, after '..' is resolved.
    roots = {"SLUICE_SQL_ROOTS": f"s3://{bucket}/tables"}
    assert rows(sluice, "select count(*) from parts", env=roots) == ["100"]
    proc = sluice.run("query", f"CREATE EXTERNAL TABLE p2 STORED AS PARQUET LOCATION "
                               f"'s3://{bucket}/tables/../store/x'", env=roots)
    assert proc.returncode == 1
    assert f"(s3://{bucket}/store/x) is outside the roots" in proc.stderr.decode()
    # With roots set, a location may not name its own endpoint: roots compare bucket and path,
    # so an allowed bucket name on another host would otherwise pass.
    proc = sluice.run("query", f"CREATE EXTERNAL TABLE p3 STORED AS PARQUET LOCATION "
                               f"'s3://{bucket}/tables/parts?endpoint_override=127.0.0.2:9'",
                      env=roots)
    assert proc.returncode == 1
    assert "carries its own S3 settings" in proc.stderr.decode(), proc.stderr.decode()
