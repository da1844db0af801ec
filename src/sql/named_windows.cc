#include "sql/named_windows.h"

#include <map>

namespace sluice::sql {

using json = nlohmann::json;

namespace {

// PostgreSQL's FRAMEOPTION_NONDEFAULT: the window has a frame clause of its own.
constexpr int64_t kFrameNonDefault = 0x1;

bool HasList(const json& def, const char* key) {
  return def.contains(key) && def.at(key).is_array() && !def.at(key).empty();
}

// `def` (a WindowDef body) with what it refers to by `refname` filled in from `defined`.
arrow::Result<json> Resolve(const json& def, const std::map<std::string, json>& defined,
                            const NodeError& error) {
  const std::string ref = def.value("refname", "");
  if (ref.empty()) return def;
  auto it = defined.find(ref);
  if (it == defined.end()) return error(def, "window \"" + ref + "\" does not exist");
  const json& base = it->second;
  if (HasList(def, "partitionClause")) {
    return error(def, "cannot override PARTITION BY clause of window \"" + ref + "\"");
  }
  if (HasList(def, "orderClause") && HasList(base, "orderClause")) {
    return error(def, "cannot override ORDER BY clause of window \"" + ref + "\"");
  }
  if (base.value("frameOptions", int64_t{0}) & kFrameNonDefault) {
    return error(def, "cannot copy window \"" + ref + "\" because it has a frame clause");
  }
  json out = def;
  out.erase("refname");
  if (HasList(base, "partitionClause")) out["partitionClause"] = base.at("partitionClause");
  if (!HasList(def, "orderClause") && HasList(base, "orderClause")) {
    out["orderClause"] = base.at("orderClause");
  }
  return out;
}

// Substitutes the windows of `defined` into the window calls under `node`, not into subqueries.
arrow::Status Substitute(json* node, const std::map<std::string, json>& defined,
                         const NodeError& error) {
  if (node->is_array()) {
    for (auto& x : *node) ARROW_RETURN_NOT_OK(Substitute(&x, defined, error));
    return arrow::Status::OK();
  }
  if (!node->is_object()) return arrow::Status::OK();
  for (auto it = node->begin(); it != node->end(); ++it) {
    if (it.key() == "SelectStmt") continue;  // a subquery's windows are its own
    if (it.key() == "FuncCall" && it.value().contains("over")) {
      json& over = it.value()["over"];
      if (over.contains("name")) {
        // OVER w: the window as defined.
        const std::string name = over.at("name").get<std::string>();
        auto found = defined.find(name);
        if (found == defined.end()) return error(over, "window \"" + name + "\" does not exist");
        json copy = found->second;
        copy.erase("name");
        if (over.contains("location")) copy["location"] = over.at("location");
        over = std::move(copy);
      } else {
        ARROW_ASSIGN_OR_RAISE(over, Resolve(over, defined, error));
      }
    }
    ARROW_RETURN_NOT_OK(Substitute(&it.value(), defined, error));
  }
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<json> WithNamedWindows(const json& select, const NodeError& error) {
  std::map<std::string, json> defined;
  for (const auto& item : select.at("windowClause")) {
    const json& def = item.at("WindowDef");
    const std::string name = def.value("name", "");
    if (defined.count(name)) return error(def, "window \"" + name + "\" is already defined");
    ARROW_ASSIGN_OR_RAISE(json resolved, Resolve(def, defined, error));
    defined[name] = std::move(resolved);
  }
  json out = select;
  out.erase("windowClause");
  ARROW_RETURN_NOT_OK(Substitute(&out, defined, error));
  return out;
}

}  // namespace sluice::sql
