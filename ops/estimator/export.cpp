#include "ops/estimator/export.hpp"

#include "messages/error.hpp"
#include "ops/estimator/layers.hpp"
#include "stores/checkpoint_dir.hpp"
#include "stores/parameter_part.hpp"

namespace darcy::ops::estimator {

namespace {

constexpr const char* export_service = "estimator_export";

caf::error bad_graph(const std::string& what) {
  return make_error(errc::invalid_config, "exported model: " + what);
}

} // namespace

caf::expected<std::string> export_model(estimator& e, const std::string& dir, const input_fn& sample,
                                        size_t keep) {
  auto first = first_batch(sample, "export");
  if (!first)
    return std::move(first.error());
  auto traced = e.trace(*first);
  if (!traced)
    return std::move(traced.error());
  auto& graph = *traced;
  if (graph.empty() || graph.back().value("op", "") != "head")
    return make_error(errc::invalid_argument, "export: the model does not end in head_spec");
  stores::checkpoint_dir root{dir};
  if (auto err = root.prepare())
    return err;
  auto version = root.next_version();
  auto graph_part = root.write_part(version + "/graph.json", graph.dump(1));
  if (!graph_part)
    return std::move(graph_part.error());
  compute::nn::adam<float> no_state{{}};
  auto weights = stores::write_parameter_part(root, version + "/weights.params", e.variables().all(),
                                              no_state);
  if (!weights) {
    root.discard(version);
    return std::move(weights.error());
  }
  checkpoint_manifest m;
  m.service = export_service;
  m.checkpoint = version;
  m.step = static_cast<int64_t>(e.global_step());
  m.parts = {*graph_part, *weights};
  if (auto err = root.commit(m, std::max<size_t>(keep, 1)))
    return err;
  return version;
}

caf::expected<std::unique_ptr<exported_model>> exported_model::load(const std::string& dir,
                                                                    const std::string& version) {
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
  m->graph_ = nlohmann::json::parse(*graph_bytes, nullptr, false);
  if (m->graph_.is_discarded() || !m->graph_.is_array())
    return make_error(errc::corrupt_file, dir + ": the graph is not JSON");
  auto take = [&](const std::string& name, Eigen::Index rows, Eigen::Index cols) -> caf::expected<matrix> {
    auto it = weights->find(name);
    if (it == weights->end())
      return make_error(errc::dimension_mismatch, "exported model: no weights for " + name);
    if (it->second.rows() != rows || it->second.cols() != cols)
      return make_error(errc::dimension_mismatch, "exported model: " + name + " is " +
                                                    std::to_string(it->second.rows()) + "x" +
                                                    std::to_string(it->second.cols()) + ", the graph needs " +
                                                    std::to_string(rows) + "x" + std::to_string(cols));
    return it->second;
  };
  // Build every variable now, from the weights, with the shapes the graph implies.
  std::map<uint64_t, Eigen::Index> width; // tensor id → columns
  try {
    for (auto& op : m->graph_) {
      auto kind = op.at("op").get<std::string>();
      if (kind == "input") {
        auto columns = compute::estimator::dense_from_spec<float>(op.at("columns"), m->tables_);
        if (!columns)
          return make_error(columns.error());
        m->inputs_.push_back(std::make_unique<compute::estimator::input_layer<float>>(std::move(*columns)));
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
      } else if (kind == "add") {
        width[op.at("out").get<uint64_t>()] = width.at(op.at("a").get<uint64_t>());
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
  if (!m->head_)
    return bad_graph("no head");
  for (auto& [name, table] : m->tables_) {
    auto value = take(name, table->value.rows(), table->value.cols());
    if (!value)
      return std::move(value.error());
    table->value = std::move(*value);
  }
  return m;
}

caf::expected<matrix> exported_model::predict(const batch& b) {
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
      t[op["out"].get<uint64_t>()] = dense(ctx, t.at(op["in"].get<uint64_t>()), op["units"].get<uint32_t>(),
                                 op["name"].get<std::string>());
    } else if (kind == "relu") {
      t[op["out"].get<uint64_t>()] = relu(ctx, t.at(op["in"].get<uint64_t>()));
    } else if (kind == "add") {
      t[op["out"].get<uint64_t>()] = add(ctx, t.at(op["a"].get<uint64_t>()), t.at(op["b"].get<uint64_t>()));
    } else {
      auto spec = head_spec(ctx, *head_, t.at(op["logits"].get<uint64_t>()), b);
      if (!spec)
        return std::move(spec.error());
      return std::move(spec->predictions);
    }
  }
  return bad_graph("no head");
}

} // namespace darcy::ops::estimator
