// Snappy decompression by Debian's libsnappy instead of the copy built into the pyarrow wheel's
// libarrow. Parquet files are snappy-compressed by default (tpchgen-cli's, Arrow's, DuckDB's,
// parquet-rs'), and decompressing their pages was a quarter to a third of the CPU of a TPC-H
// query at SF 1. On a page of lineitem's l_partkey, the wheel's copy ran at 0.55-0.8 GB/s and
// Debian's 1.1.9 at 0.9-1.2 GB/s on the same machine.
//
// Arrow offers no way to choose a codec's implementation, so snappy_codec.cc defines
// arrow::util::Codec::Create in the executable that links it. The wheel's libparquet calls Create
// through its PLT, and the dynamic linker binds that call to the executable's definition (which
// the link exports for it: sluice_link_snappy_codec in src/storage/CMakeLists.txt). The
// definition asks Arrow's own Create for the codec and, for snappy, wraps it so that only
// Decompress changes. Compression, streaming and every other codec stay Arrow's, and the bytes a
// page decompresses to are the same: snappy is one format.
//
// Link it into executables only, as the OBJECT library sluice_snappy_codec: a static library's
// member would be linked only where something else happened to pull it in.
#pragma once

#include <cstdint>

namespace sluice::storage {

/// How many buffers this process has decompressed with libsnappy. It stays 0 where Arrow's own
/// codec still does the work: the executable does not link snappy_codec.cc, or a future Arrow
/// no longer calls Codec::Create through its PLT. Tests check it, so that such a change is seen.
int64_t LibsnappyDecompressions();

}  // namespace sluice::storage
