#include "sql/plan_node.h"

#include <sstream>

namespace sluice::sql {

std::string PlanNode::Explain(int indent) const {
  std::ostringstream out;
  out << std::string(static_cast<size_t>(indent) * 2, ' ');
  switch (kind) {
    case Kind::kScan: {
      out << "Scan " << table->name << " (" << table->files.size() << " files) columns=[";
      for (size_t i = 0; i < columns.size(); ++i) out << (i ? ", " : "") << columns[i];
      out << "]";
      if (!scan_filter.Equals(arrow::compute::literal(true))) {
        out << " pushdown=" << scan_filter.ToString();
      }
      break;
    }
    case Kind::kFilter:
      out << "Filter " << predicate.ToString();
      break;
    case Kind::kProject:
      out << "Project ";
      for (size_t i = 0; i < expressions.size(); ++i) {
        out << (i ? ", " : "") << names[i] << " := " << expressions[i].ToString();
      }
      break;
    case Kind::kAggregate:
      out << (final_phase ? "FinalAggregate" : "PartialAggregate") << " keys=[";
      for (size_t i = 0; i < keys.size(); ++i) out << (i ? ", " : "") << keys[i];
      out << "] aggregates=[";
      for (size_t i = 0; i < aggregates.size(); ++i) {
        out << (i ? ", " : "") << aggregates[i].output << " := " << aggregates[i].function << "("
            << aggregates[i].input << ")";
      }
      out << "]";
      break;
    case Kind::kSort:
      out << "Sort ";
      for (size_t i = 0; i < sort_keys.size(); ++i) {
        out << (i ? ", " : "") << sort_keys[i].target.ToString()
            << (sort_keys[i].order == arrow::compute::SortOrder::Descending ? " DESC" : "");
      }
      break;
    case Kind::kLimit:
      out << "Limit offset=" << offset << " count=" << count;
      break;
    case Kind::kJoin:
      out << "HashJoin inner on ";
      for (size_t i = 0; i < left_keys.size(); ++i) {
        out << (i ? " and " : "") << left_keys[i] << " = " << right_keys[i];
      }
      break;
  }
  out << "\n";
  if (input != nullptr) out << input->Explain(indent + 1);
  if (right != nullptr) out << right->Explain(indent + 1);
  return out.str();
}

}  // namespace sluice::sql
