#include "ops/estimator/export/export.hpp"

#include <algorithm>
#include <filesystem>

#include "compute/nn/dot_interaction.hpp"
#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/estimator/dynamic_embedding_column.hpp"
#include "ops/estimator/layers.hpp"
#include "ops/follow_chain.hpp"
#include "stores/checkpoint/checkpoint_chain.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"
#include "stores/checkpoint/checkpoint_transaction.hpp"
#include "stores/checkpoint/parameter_part.hpp"

namespace darcy::ops::estimator {

namespace {

constexpr const char* export_service = "estimator_export";

caf::error bad_graph(const std::string& what) {
  return make_error(errc::invalid_config, "exported model: " + what);
}

bool is_head(const nlohmann::json& op) {
  auto kind = op.value("op", "");
  return kind == "head" || kind == "sampled_softmax_head";
}

/// e's variables as the part weights.params of `t`, with the optimizer's state when
/// `with_state`.
caf::expected<file_info> write_weights(estimator& e, const stores::checkpoint_transaction& t,
                                       bool with_state) {
  compute::nn::optimizer no_state{{}};
  return stores::write_parameter_part(t.root(), t.id() + "/weights.params", e.variables().all(),
                                      with_state ? e.optimizer() : no_state);
}

/// The newest dense sync under `sync_dir` (write_dense_sync): its manifest, and its part's
/// bytes unless it is checkpoint `held`. errc::not_found when there is none.
struct dense_sync {
  checkpoint_manifest manifest;
  std::optional<std::string> bytes;
};

caf::expected<dense_sync> read_dense(const std::string& sync_dir, const std::string& held) {
  stores::checkpoint_dir root{sync_dir + "/dense"};
  if (!std::filesystem::exists(root.root()))
    return make_error(errc::not_found, sync_dir + " holds no dense sync");
  auto head = root.read_manifest();
  if (!head)
    return std::move(head.error());
  dense_sync out{*head, std::nullopt};
  if (head->checkpoint == held)
    return out;
  if (head->parts.size() != 1)
    return make_error(errc::corrupt_file, root.root() + ": a dense sync holds one part");
  auto bytes = root.read_part(head->parts[0]);
  if (!bytes)
    return std::move(bytes.error());
  out.bytes = std::move(*bytes);
  return out;
}

/// The copies that bring each of `targets` to its value in `weights`, once every one of them is
/// there with its shape (errc::dimension_mismatch naming dense sync `id` otherwise).
caf::expected<std::vector<std::pair<matrix*, const matrix*>>> plan_copy(
  const std::map<std::string, matrix>& weights,
  const std::vector<compute::nn::parameter<float>*>& targets, const std::string& id) {
  std::vector<std::pair<matrix*, const matrix*>> moves;
  for (auto* p : targets) {
    auto it = weights.find(p->name);
    if (it == weights.end() || it->second.rows() != p->value.rows() ||
        it->second.cols() != p->value.cols())
      return make_error(errc::dimension_mismatch,
                        "dense sync " + id + ": " + p->name +
                          (it == weights.end() ? " is missing" : " has another shape"));
    moves.emplace_back(&p->value, &it->second);
  }
  return moves;
}

} // namespace

caf::expected<std::string> export_model(estimator& e, const std::string& dir,
                                        const input_fn& sample, size_t keep) {
  auto first = first_batch(sample, "export");
  if (!first)
    return std::move(first.error());
  auto traced = e.trace(*first);
  if (!traced)
    return std::move(traced.error());
  auto& graph = *traced;
  if (graph.empty() || !is_head(graph.back()))
    return make_error(errc::invalid_argument,
                      "export: the model does not end in head_spec or a sampled_softmax_head");
  // A failure before the commit leaves no version behind (the transaction discards it).
  auto t = stores::checkpoint_transaction::begin_version(dir);
  if (!t)
    return std::move(t.error());
  auto version = t->id();
  auto graph_part = t->root().write_part(version + "/graph.json", graph.dump(1));
  if (!graph_part)
    return std::move(graph_part.error());
  auto weights = write_weights(e, *t, false);
  if (!weights)
    return std::move(weights.error());
  checkpoint_manifest m;
  m.service = export_service;
  m.step = static_cast<int64_t>(e.global_step());
  m.parts = {*graph_part, *weights};
  if (auto* s = e.config().embeddings) {
    auto name = version + "/embeddings";
    if (auto err = ops::save(*s, dir + "/" + name, {m.step, {}, {}}))
      return err;
    m.extra = nlohmann::json{{"embeddings", name}}.dump();
  }
  if (auto err = t->commit(m, std::max<size_t>(keep, 1)))
    return err;
  return version;
}

caf::error write_dense_sync(estimator& e, const std::string& sync_dir, int64_t step) {
  auto t = stores::checkpoint_transaction::begin_version(sync_dir + "/dense");
  if (!t)
    return std::move(t.error());
  auto weights = write_weights(e, *t, true);
  if (!weights)
    return std::move(weights.error());
  checkpoint_manifest m;
  m.service = dense_sync_service;
  m.step = step;
  m.parts = {*weights};
  return t->commit(m, 2);
}

bool is_estimator_export(const std::string& dir) {
  auto manifest = stores::checkpoint_dir{dir}.read_manifest();
  return manifest && manifest->service == export_service;
}

caf::expected<std::unique_ptr<exported_model>> exported_model::load(
  const std::string& dir, const std::string& version, const embedding_placement& where) {
  stores::checkpoint_dir root{dir};
  auto manifest = version.empty() ? root.read_manifest() : root.read_manifest_of(version);
  if (!manifest)
    return std::move(manifest.error());
  if (manifest->service != export_service || manifest->parts.size() != 2)
    return make_error(errc::invalid_config, dir + " holds no estimator export");
  auto graph_bytes = root.read_part(manifest->parts[0]);
  if (!graph_bytes)
    return std::move(graph_bytes.error());
  auto weight_bytes = root.read_part(manifest->parts[1]);
  if (!weight_bytes)
    return std::move(weight_bytes.error());
  auto weights = stores::decode_named_values(*weight_bytes);
  if (!weights)
    return std::move(weights.error());
  std::unique_ptr<exported_model> m{new exported_model};
  m->version_ = manifest->checkpoint;
  if (!manifest->extra.empty()) {
    auto extra = nlohmann::json::parse(manifest->extra, nullptr, false);
    if (!extra.is_object() || !extra.value("embeddings", nlohmann::json{}).is_string())
      return make_error(errc::corrupt_file, dir + ": the export's manifest is damaged");
    if (auto err = m->open_embeddings(dir + "/" + extra["embeddings"].get<std::string>(), where))
      return err;
  }
  // Columns backed by the embedding service: built on the export's own snapshot.
  auto field_of = [&m](const nlohmann::json& spec) -> plain_expected<dynamic_field> {
    auto config = m->embedding_config(spec.at("name").get<std::string>());
    if (!config)
      return to_plain(config.error());
    dynamic_field f{spec.at("key").get<std::string>(), nullptr, *config};
    if (spec.contains("column")) {
      auto ids = compute::estimator::categorical_from_spec(spec.at("column"));
      if (!ids)
        return ids.error();
      f.column = *ids;
    }
    return f;
  };
  compute::estimator::column_resolver<float> service_columns =
    [&m, &field_of](
      const nlohmann::json& spec) -> plain_expected<compute::estimator::dense_ptr<float>> {
    auto kind = spec.at("kind").get<std::string>();
    if (kind != "dynamic_embedding" && kind != "dynamic_embeddings")
      return plain_error{errc::invalid_config,
                         "exported model: unknown column kind " + spec.at("kind").dump()};
    auto how = compute::estimator::combiner_named(spec.at("combiner").get<std::string>());
    if (!how)
      return plain_error{errc::invalid_config,
                         "exported model: unknown combiner " + spec.at("combiner").dump()};
    std::vector<dynamic_field> fields;
    for (auto& f :
         kind == "dynamic_embedding" ? nlohmann::json::array({spec}) : spec.at("fields")) {
      auto field = field_of(f);
      if (!field)
        return field.error();
      fields.push_back(std::move(*field));
    }
    auto column = dynamic_embedding_columns(*m->session_, std::move(fields), *how);
    if (!column)
      return to_plain(column.error());
    return *column;
  };
  m->graph_ = nlohmann::json::parse(*graph_bytes, nullptr, false);
  if (m->graph_.is_discarded() || !m->graph_.is_array())
    return make_error(errc::corrupt_file, dir + ": the graph is not JSON");
  auto take = [&](const std::string& name, Eigen::Index rows,
                  Eigen::Index cols) -> caf::expected<matrix> {
    auto it = weights->find(name);
    if (it == weights->end())
      return make_error(errc::dimension_mismatch, "exported model: no weights for " + name);
    if (it->second.rows() != rows || it->second.cols() != cols)
      return make_error(errc::dimension_mismatch,
                        "exported model: " + name + " is " + std::to_string(it->second.rows()) +
                          "x" + std::to_string(it->second.cols()) + ", the graph needs " +
                          std::to_string(rows) + "x" + std::to_string(cols));
    return it->second;
  };
  // Build every variable now, from the weights, with the shapes the graph implies.
  std::map<uint64_t, Eigen::Index> width; // tensor id → columns
  try {
    for (auto& op : m->graph_) {
      auto kind = op.at("op").get<std::string>();
      if (kind == "input") {
        auto columns =
          compute::estimator::dense_from_spec<float>(op.at("columns"), m->tables_, service_columns);
        if (!columns)
          return make_error(columns.error());
        m->inputs_.push_back(
          std::make_unique<compute::estimator::input_layer<float>>(std::move(*columns)));
        width[op.at("out").get<uint64_t>()] = m->inputs_.back()->width();
      } else if (kind == "dense") {
        auto name = op.at("name").get<std::string>();
        auto in = width.at(op.at("in").get<uint64_t>());
        auto units = op.at("units").get<Eigen::Index>();
        auto kernel = take(name + "/kernel", in, units);
        auto bias = take(name + "/bias", 1, units);
        if (!kernel || !bias)
          return kernel ? std::move(bias.error()) : std::move(kernel.error());
        m->vars_.get(name + "/kernel", [&] { return *kernel; });
        m->vars_.get(name + "/bias", [&] { return *bias; });
        width[op.at("out").get<uint64_t>()] = units;
      } else if (kind == "relu") {
        width[op.at("out").get<uint64_t>()] = width.at(op.at("in").get<uint64_t>());
      } else if (kind == "batch_norm") {
        auto name = op.at("name").get<std::string>();
        auto in = width.at(op.at("in").get<uint64_t>());
        for (auto* part : {"/gamma", "/beta", "/moving_mean", "/moving_variance"}) {
          auto value = take(name + part, 1, in);
          if (!value)
            return std::move(value.error());
          m->vars_.get(name + part, [&] { return *value; });
        }
        width[op.at("out").get<uint64_t>()] = in;
      } else if (kind == "dot_interaction") {
        auto d = width.at(op.at("dense").get<uint64_t>());
        auto s = width.at(op.at("sparse").get<uint64_t>());
        if (d == 0 || s % d != 0)
          return bad_graph("a dot_interaction of widths " + std::to_string(d) + " and " +
                           std::to_string(s));
        width[op.at("out").get<uint64_t>()] = compute::nn::dot_interaction_width(s / d, d);
      } else if (kind == "add") {
        width[op.at("out").get<uint64_t>()] = width.at(op.at("a").get<uint64_t>());
      } else if (kind == "append_ones") {
        width[op.at("out").get<uint64_t>()] = width.at(op.at("x").get<uint64_t>()) + 1;
      } else if (kind == "sampled_softmax_head") {
        (void)width.at(op.at("output").get<uint64_t>());
        auto labels = m->embedding_config(op.at("labels").get<std::string>());
        if (!labels)
          return std::move(labels.error());
        auto head = sampled_softmax_head::make(
          *m->session_, {.labels = *labels, .k = op.at("k").get<uint32_t>()});
        if (!head)
          return std::move(head.error());
        m->label_head_ = *head;
      } else if (kind == "head") {
        (void)width.at(op.at("logits").get<uint64_t>()); // a tensor of the graph
        std::vector<compute::estimator::head_config> parts;
        for (auto& h : op.at("heads"))
          parts.push_back({static_cast<compute::estimator::head_kind>(h.at("kind").get<int>()),
                           h.at("name").get<std::string>(), h.at("classes").get<uint32_t>(),
                           h.at("label_dimension").get<uint32_t>(), h.at("weight").get<double>()});
        auto head = compute::estimator::head<float>::make(parts);
        if (!head)
          return make_error(head.error());
        m->head_ = std::make_unique<compute::estimator::head<float>>(std::move(*head));
      } else {
        return bad_graph("unknown op '" + kind + "'");
      }
    }
  } catch (const std::exception& e) { // nlohmann's errors and std::map::at's
    return bad_graph(std::string{"a malformed graph: "} + e.what());
  }
  if (!m->head_ && !m->label_head_)
    return bad_graph("no head");
  for (auto& [name, table] : m->tables_) {
    auto value = take(name, table->value.rows(), table->value.cols());
    if (!value)
      return std::move(value.error());
    table->value = std::move(*value);
  }
  return m;
}

caf::expected<std::unique_ptr<session>> open_serving_tables(const std::string& path,
                                                            const embedding_placement& where,
                                                            std::vector<de_config>& configs) {
  // The rows are the model's own copy, in memory, even when training kept them in LevelDB.
  session_options so{.name = "exported-model", .threads = 1, .tables_in_memory = true};
  if (where.cluster) {
    so.seed = where.cluster;
    so.shards = where.shards;
    so.shard_nodes = where.nodes;
    so.timeout = where.timeout;
    so.direct_shards = true;
    // A sync every few seconds cannot wait 2 s for a lost message: ask again soon, and often
    // enough (doubling each time) that a long restore still gets its answer.
    so.shard_retry = std::chrono::milliseconds{250};
    so.shard_attempts = 8;
  }
  auto opened = session::open(so);
  if (!opened)
    return std::move(opened.error());
  auto& s = **opened;
  // Shards on other nodes read the snapshot from their own host's disk (ops::restore sends it).
  auto where_from = where.cluster ? std::filesystem::absolute(path).string() : path;
  auto restored = restore(s, where_from, where.restore_timeout);
  if (!restored)
    return std::move(restored.error());
  configs = std::move(restored->embeddings);
  // On a cluster, the route straight to the shards comes with each embedding.
  if (where.cluster)
    for (auto& cfg : configs)
      if (auto err = s.ensure_embedding(cfg))
        return err;
  return opened;
}

caf::error exported_model::open_embeddings(const std::string& path,
                                           const embedding_placement& where) {
  auto opened = open_serving_tables(path, where, embeddings_);
  if (!opened)
    return std::move(opened.error());
  session_ = std::move(*opened);
  return {};
}

caf::expected<exported_model::followed> exported_model::follow(
  const std::string& dir, std::optional<std::chrono::milliseconds> restore_patience) {
  if (!session_)
    return make_error(errc::invalid_config, "exported model: it has no dynamic embeddings");
  auto where = session_->in_process() ? dir : std::filesystem::absolute(dir).string();
  auto chain = follow_chain(*session_, where, followed_, restore_patience);
  if (!chain)
    return std::move(chain.error());
  followed out{chain->checkpoint, chain->step, chain->applied, chain->restored};
  if (auto err = follow_dense(where, out))
    return err;
  return out;
}

caf::error exported_model::follow_dense(const std::string& dir, followed& out) {
  out.dense_step = dense_step_;
  auto dense = read_dense(dir, dense_followed_);
  if (!dense)
    return is(dense.error(), errc::not_found) ? caf::error{} : std::move(dense.error());
  if (!dense->bytes)
    return {};                                               // the one held
  auto weights = stores::decode_named_values(*dense->bytes); // without the optimizer's state
  if (!weights)
    return std::move(weights.error());
  std::vector<compute::nn::parameter<float>*> targets = vars_.all();
  for (auto& [name, table] : tables_)
    targets.push_back(table.get());
  auto moves = plan_copy(*weights, targets, dense->manifest.checkpoint);
  if (!moves)
    return std::move(moves.error());
  {
    std::lock_guard<std::mutex> guard{predict_mutex_};
    for (auto& [into, from] : *moves)
      *into = *from;
  }
  dense_followed_ = dense->manifest.checkpoint;
  dense_step_ = out.dense_step = dense->manifest.step;
  return {};
}

caf::expected<int64_t> read_dense_sync(estimator& e, const std::string& sync_dir) {
  auto dense = read_dense(sync_dir, "");
  if (!dense)
    return std::move(dense.error());
  if (auto err = stores::decode_parameters(*dense->bytes, e.variables().all(), e.optimizer()))
    return err;
  return dense->manifest.step;
}

caf::expected<de_config> exported_model::embedding_config(const std::string& name) const {
  for (auto& c : embeddings_)
    if (c.name == name)
      return c;
  return make_error(errc::corrupt_file, "exported model: the graph uses embedding '" + name +
                                          "', which the export's snapshot does not hold");
}

caf::expected<estimator_spec> exported_model::predict_spec(const batch& b) {
  std::lock_guard<std::mutex> guard{predict_mutex_};
  model_context ctx{vars_, mode::predict, 0, 2};
  std::map<uint64_t, tensor> t; // graph tensor id → this call's tensor
  size_t next_input = 0;
  for (auto& op : graph_) {
    auto kind = op["op"].get<std::string>();
    if (kind == "input") {
      auto x = input_layer(ctx, b.features, *inputs_[next_input++]);
      if (!x)
        return std::move(x.error());
      t[op["out"].get<uint64_t>()] = *x;
    } else if (kind == "dense") {
      t[op["out"].get<uint64_t>()] =
        dense(ctx, t.at(op["in"].get<uint64_t>()), op["units"].get<uint32_t>(),
              op["name"].get<std::string>());
    } else if (kind == "relu") {
      t[op["out"].get<uint64_t>()] = relu(ctx, t.at(op["in"].get<uint64_t>()));
    } else if (kind == "batch_norm") {
      t[op["out"].get<uint64_t>()] =
        batch_norm(ctx, t.at(op["in"].get<uint64_t>()), op["name"].get<std::string>(), 0.99f,
                   op["eps"].get<float>());
    } else if (kind == "dot_interaction") {
      auto y =
        dot_interaction(ctx, t.at(op["dense"].get<uint64_t>()), t.at(op["sparse"].get<uint64_t>()));
      if (!y)
        return std::move(y.error());
      t[op["out"].get<uint64_t>()] = *y;
    } else if (kind == "add") {
      t[op["out"].get<uint64_t>()] =
        add(ctx, t.at(op["a"].get<uint64_t>()), t.at(op["b"].get<uint64_t>()));
    } else if (kind == "append_ones") {
      t[op["out"].get<uint64_t>()] = append_ones(ctx, t.at(op["x"].get<uint64_t>()));
    } else if (kind == "sampled_softmax_head") {
      return label_head_->spec(ctx, t.at(op["output"].get<uint64_t>()), b);
    } else {
      return head_spec(ctx, *head_, t.at(op["logits"].get<uint64_t>()), b);
    }
  }
  return bad_graph("no head");
}

caf::expected<matrix> exported_model::predict(const batch& b) {
  auto spec = predict_spec(b);
  if (!spec)
    return std::move(spec.error());
  return std::move(spec->predictions);
}

caf::expected<std::vector<std::vector<std::string>>> exported_model::predict_labels(
  const batch& b) {
  if (!label_head_)
    return bad_graph("its head predicts no labels");
  auto spec = predict_spec(b);
  if (!spec)
    return std::move(spec.error());
  return std::move(spec->predicted_labels);
}

} // namespace darcy::ops::estimator
