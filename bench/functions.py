"""Function libraries against the same expressions built in, on TPC-H lineitem (SF 1: 6M rows),
both through `sluice query` in one run: the example library's net_revenue (a scalar through the
C ABI) against price * (1 - discount), and weighted_avg (an aggregate whose state crosses the
ABI per batch) against sum(v * w) / sum(w). The ratios are the ABI's overhead on a whole query.
Run through bench/run.py."""

import re
import subprocess
import sys
from pathlib import Path

import tpch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SLUICE = str(ROOT / "build" / "sluice")
LIBRARY = ROOT / "build" / "functions" / "libsluice-example-functions.so"

QUERIES = {
    "functions-scalar": {
        "sluice-abi": "select sum(net_revenue(l_extendedprice, l_discount)) from lineitem",
        "sluice-builtin": "select sum(cast(l_extendedprice as double) * "
                          "(1 - cast(l_discount as double))) from lineitem",
    },
    "functions-aggregate": {
        "sluice-abi": "select l_returnflag, weighted_avg(l_extendedprice, l_quantity) "
                      "from lineitem group by l_returnflag",
        "sluice-builtin": "select l_returnflag, sum(cast(l_extendedprice as double) * "
                          "cast(l_quantity as double)) / sum(cast(l_quantity as double)) "
                          "from lineitem group by l_returnflag",
    },
}


def prepare():
    """TPC-H's tables (bench/tpch.py) and the example library, published and created as `ex`."""
    tpch.prepare()
    out = subprocess.run([SLUICE, "function", "publish", str(LIBRARY)], env=tpch.env(),
                         check=True, capture_output=True, text=True).stdout
    digest = re.search(r"artifact_blake3=([0-9a-f]{64})", out).group(1)
    subprocess.run([SLUICE, "query", f"CREATE FUNCTION LIBRARY ex FROM PIN '{digest}'"],
                   env=tpch.env(), check=True, stdout=subprocess.DEVNULL)


def env():
    """The TPC-H session's home and store (bench/tpch.py)."""
    return {k: v for k, v in tpch.env().items() if k.startswith("SLUICE_")}


def commands(name):
    return {engine: [SLUICE, "query", "--format", "csv", sql]
            for engine, sql in QUERIES[name].items()}


def section(results) -> str:
    rows = []
    for name in QUERIES:
        times = {r.engine: r.median for r in results if r.workload == name and r.seconds}
        if "sluice-abi" in times and "sluice-builtin" in times:
            rows.append(f"| {name} | {times['sluice-builtin']:.3f} | {times['sluice-abi']:.3f} | "
                        f"{times['sluice-abi'] / times['sluice-builtin']:.2f} |")
    if not rows:
        return ""
    return ("## Function libraries: through the ABI against built in (TPC-H SF "
            f"{tpch.SF} lineitem)\n\nTarget: a scalar function at most 1.2x the built-in "
            "expression.\n\n| workload | built in s | library s | ratio |\n|---|---:|---:|---:|\n"
            + "\n".join(rows) + "\n\n")


if __name__ == "__main__":
    sys.exit("run through bench/run.py")
