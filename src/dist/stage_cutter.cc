#include "dist/stage_cutter.h"

#include <map>
#include <utility>

#include "plan/column_texts.h"

namespace sluice::dist {

namespace {

using plan::PlanNode;

bool IsSplitLeaf(const PlanNode& n) {
  return n.kind == PlanNode::Kind::kScanObjects || (n.kind == PlanNode::Kind::kScan && n.split);
}

std::string StageFolder(const std::string& shuffle_folder, int stage) {
  return shuffle_folder + "/s" + std::to_string(stage);
}

}  // namespace

arrow::Result<std::unique_ptr<StageCut>> StageCut::Make(const PlanNode& plan, CutOptions options) {
  std::unique_ptr<StageCut> cut(new StageCut(std::move(options)));
  if (cut->options_.root_stage) {
    ARROW_RETURN_NOT_OK(cut->AddStage(&plan, nullptr).status());
  } else {
    // The caller's part: only the exchanges it reads matter (the plan's root may be one).
    CutStage driver;
    if (plan.kind == PlanNode::Kind::kExchange && plan.input != nullptr) {
      ARROW_ASSIGN_OR_RAISE(size_t producer, cut->AddStage(plan.input.get(), &plan));
      driver.inputs.push_back(&plan);
      driver.producers.push_back(producer);
    } else {
      ARROW_RETURN_NOT_OK(cut->Walk(plan, &driver));
    }
    for (size_t i = 0; i < driver.inputs.size(); ++i) {
      if (!driver.inputs[i]->exchange.gather) {
        return arrow::Status::Invalid("internal: the driver reads a hash exchange");
      }
      cut->gathered_.emplace_back(driver.inputs[i], driver.producers[i]);
    }
  }
  return cut;
}

arrow::Status StageCut::Walk(const PlanNode& node, CutStage* stage) {
  if (IsSplitLeaf(node)) {
    if (stage->split != nullptr) {
      return arrow::Status::Invalid("internal: a stage with two split leaves");
    }
    stage->split = &node;
  }
  std::vector<const PlanNode*> children = {node.input.get(), node.right.get()};
  for (const auto& item : node.items) children.push_back(item.get());
  for (const PlanNode* child : children) {
    if (child == nullptr) continue;
    if (child->kind != PlanNode::Kind::kExchange) {
      ARROW_RETURN_NOT_OK(Walk(*child, stage));
      continue;
    }
    if (child->input == nullptr) return arrow::Status::Invalid("internal: an exchange of nothing");
    ARROW_ASSIGN_OR_RAISE(size_t producer, AddStage(child->input.get(), child));
    stage->inputs.push_back(child);
    stage->producers.push_back(producer);
  }
  return arrow::Status::OK();
}

arrow::Result<size_t> StageCut::AddStage(const PlanNode* root, const PlanNode* exchange) {
  CutStage stage;
  stage.root = root;
  stage.exchange = exchange;
  ARROW_RETURN_NOT_OK(Walk(*root, &stage));
  if ((stage.split == nullptr) == stage.inputs.empty()) {
    return arrow::Status::Invalid(
        "internal: a stage must read either its split leaf or exchanges, not ",
        stage.split == nullptr ? "neither" : "both");
  }
  if (stage.split != nullptr) {
    // Without shares every task would read the whole leaf: each row once per task.
    if (!options_.split_tasks || !options_.split_share) {
      return arrow::Status::Invalid("internal: a split stage without split_tasks and split_share");
    }
    stage.tasks = options_.split_tasks(*stage.split);
  } else {
    stage.tasks = stage.inputs[0]->exchange.gather ? 1 : stage.inputs[0]->exchange.partitions;
    for (const PlanNode* in : stage.inputs) {
      if (in->exchange.gather || in->exchange.partitions != stage.tasks) {
        return arrow::Status::Invalid(
            "internal: a stage's input exchanges disagree on their partitions");
      }
    }
  }
  if (stage.tasks < 1) return arrow::Status::Invalid("internal: a stage of no tasks");
  stage.id =
      options_.stage_id ? options_.stage_id(*root, exchange) : static_cast<int>(stages_.size());
  stage.name = options_.stage_name ? options_.stage_name(*root, exchange, stage.id)
                                   : "stage " + std::to_string(stage.id);
  stages_.push_back(std::move(stage));
  return stages_.size() - 1;
}

std::vector<ScheduledStage> StageCut::Scheduled() {
  std::vector<ScheduledStage> out;
  for (size_t i = 0; i < stages_.size(); ++i) {
    const CutStage& stage = stages_[i];
    ScheduledStage s;
    s.id = stage.id;
    s.name = stage.name;
    s.producers = stage.producers;
    s.fragments = [this, i](const std::vector<StageResult>& done) { return Fragments(i, done); };
    if (stage.exchange != nullptr) {
      s.shuffle_files = stage.exchange->exchange.gather ? 1 : stage.exchange->exchange.partitions;
      s.shuffle_file_key = [folder = StageFolder(options_.shuffle_folder, stage.id)](
                               const plan::Fragment& task, int32_t attempt, int32_t file) {
        return plan::ShuffleFileKey(folder, task.task_name(), attempt, file);
      };
    }
    out.push_back(std::move(s));
  }
  return out;
}

arrow::Result<std::vector<plan::Fragment>> StageCut::Fragments(
    size_t index, const std::vector<StageResult>& done) {
  CutStage& stage = stages_[index];
  stage.read_bytes.assign(static_cast<size_t>(stage.tasks), 0);
  // Each input exchange's rows, as the next stage reads them.
  std::vector<std::shared_ptr<arrow::Schema>> schemas;
  // What the inputs' hidden columns computed, for errors' text in the tasks.
  std::vector<plan::ColumnTexts> texts;
  for (const PlanNode* in : stage.inputs) {
    ARROW_ASSIGN_OR_RAISE(auto schema, plan::OutputSchema(*in));
    schemas.push_back(std::move(schema));
    texts.push_back(plan::HiddenColumnTexts(*in));
  }
  std::vector<plan::Fragment> out;
  for (int t = 0; t < stage.tasks; ++t) {
    std::map<const PlanNode*, plan::ShuffleRead> reads;
    for (size_t i = 0; i < stage.inputs.size(); ++i) {
      const PlanNode* in = stage.inputs[i];
      plan::ShuffleRead read;
      read.schema = schemas[i];
      read.partition_keys = in->exchange.keys;
      read.column_texts = texts[i];
      for (const exec::TaskReport& r : done[stage.producers[i]].reports) {
        if (static_cast<size_t>(t) >= r.shuffle_files.size()) {
          return arrow::Status::Invalid("internal: task ", r.task, " reported ",
                                        r.shuffle_files.size(), " shuffle files, not ",
                                        in->exchange.partitions);
        }
        const exec::OutputFile& file = r.shuffle_files[static_cast<size_t>(t)];
        read.files.push_back(file.key);
        read.blake3.push_back(file.blake3);
        stage.read_bytes[static_cast<size_t>(t)] += file.bytes;
      }
      reads[in] = std::move(read);
    }
    arrow::Status failed;
    auto replace = [&](const PlanNode& n) -> std::unique_ptr<PlanNode> {
      if (auto it = reads.find(&n); it != reads.end()) {
        auto node = plan::MakeNode(PlanNode::Kind::kShuffleRead);
        node->shuffle_read = it->second;
        return node;
      }
      if (&n != stage.split) {
        if (stage.split == nullptr || !options_.task_node || !failed.ok()) return nullptr;
        auto node = options_.task_node(*stage.root, *stage.split, n, t);
        if (node.ok()) return std::move(*node);
        failed = node.status();
        return nullptr;
      }
      auto share = options_.split_share(n, t);
      if (share.ok()) return std::move(*share);
      failed = share.status();
      return plan::CopyPlan(n);
    };
    auto body = plan::CopyPlan(*stage.root, replace);
    ARROW_RETURN_NOT_OK(failed);
    if (stage.exchange != nullptr) {
      const plan::Exchange& ex = stage.exchange->exchange;
      auto top = plan::MakeNode(PlanNode::Kind::kShuffleWrite, std::move(body));
      top->shuffle_write.folder = StageFolder(options_.shuffle_folder, stage.id);
      if (!ex.gather) {
        top->shuffle_write.keys = ex.keys;
        top->shuffle_write.partitions = ex.partitions;
        top->shuffle_write.one_row_per_key = ex.one_row_per_key;
      }
      body = std::move(top);
    } else if (options_.finish_root) {
      options_.finish_root(t, body.get());
    }
    plan::Fragment f;
    f.run_id = options_.run_id;
    f.stage_id = stage.id;
    f.partition = t;
    f.session = options_.session;
    f.root = std::move(body);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace sluice::dist
