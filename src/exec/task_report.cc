#include "exec/task_report.h"

#include <nlohmann/json.hpp>

namespace sluice::exec {

std::string TaskReport::ToJsonLine() const {
  auto files_json = [](const std::vector<OutputFile>& list) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& f : list) {
      out.push_back({{"key", f.key},
                     {"rows", f.rows},
                     {"bytes", f.bytes},
                     {"blake3", f.blake3},
                     {"schema", f.schema}});
    }
    return out;
  };
  nlohmann::json doc = {{"sluice_task_report", 1},
                        {"task", task},
                        {"attempt", attempt},
                        {"status", status},
                        {"error", error},
                        {"objects", objects},
                        {"records_in", records_in},
                        {"broadcast_rows", broadcast_rows},
                        {"bad_records", bad_records},
                        {"rows_out", rows_out},
                        {"duplicates_dropped", duplicates_dropped},
                        {"seconds", seconds},
                        {"worker_pid", worker_pid},
                        {"files", files_json(files)},
                        {"shuffle_files", files_json(shuffle_files)}};
  // dump() escapes newlines, so the report is always one line.
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

arrow::Result<TaskReport> TaskReport::FromJsonLine(const std::string& line) {
  nlohmann::json doc = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("sluice_task_report")) {
    return arrow::Status::Invalid("not a task report");
  }
  TaskReport r;
  try {
    r.task = doc.at("task").get<std::string>();
    r.attempt = doc.at("attempt").get<int32_t>();
    r.status = doc.at("status").get<std::string>();
    r.error = doc.at("error").get<std::string>();
    r.objects = doc.at("objects").get<int64_t>();
    r.records_in = doc.at("records_in").get<int64_t>();
    r.broadcast_rows = doc.value("broadcast_rows", int64_t{0});
    r.bad_records = doc.at("bad_records").get<int64_t>();
    r.rows_out = doc.at("rows_out").get<int64_t>();
    r.duplicates_dropped = doc.at("duplicates_dropped").get<int64_t>();
    r.seconds = doc.at("seconds").get<double>();
    r.worker_pid = doc.value("worker_pid", int64_t{0});
    for (const char* list : {"files", "shuffle_files"}) {
      auto& out = std::string(list) == "files" ? r.files : r.shuffle_files;
      for (const auto& f : doc.at(list)) {
        out.push_back({f.at("key").get<std::string>(), f.at("rows").get<int64_t>(),
                       f.at("bytes").get<int64_t>(), f.at("blake3").get<std::string>(),
                       f.value("schema", std::string())});
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return arrow::Status::Invalid("malformed task report: ", e.what());
  }
  return r;
}

}  // namespace sluice::exec
