// A file fragment whose read errors name the table and the file they came from. Arrow's Parquet
// reader reports a corrupt page as "IOError: Unexpected end of stream", without a word of which
// file of which table, and a table may have many files.
#pragma once

#include <arrow/dataset/file_base.h>

#include <memory>
#include <string>

namespace sluice::exec {

/// `fragment`, read the same, whose errors (opening it, its schema, each batch) start with
/// "table '<table>', file '<its path>': ".
std::shared_ptr<arrow::dataset::FileFragment> NameReadErrors(
    std::shared_ptr<arrow::dataset::FileFragment> fragment, const std::string& table);

}  // namespace sluice::exec
