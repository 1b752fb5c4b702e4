#include "python/src/session.hpp"

#include <chrono>

#include "ops/embedding_ops.hpp"
#include "ops/online/sync_message.hpp"
#include "ops/torch/torch_export.hpp"
#include "python/src/store_choice.hpp"
#include "runtime/cluster/cluster_file.hpp"
#include "runtime/cluster/cluster_secret.hpp"
#include "runtime/tls.hpp"
#include "stores/checkpoint/checkpoint_chain.hpp"

namespace py = pybind11;

namespace darcy::python {

session_handle::~session_handle() {
  // The service's threads never call into Python, so stopping them while holding the GIL
  // cannot wait on it.
  std::unique_lock<std::shared_mutex> lock{gate_};
  session_.reset();
}

void session_handle::close() {
  py::gil_scoped_release release;
  std::unique_ptr<ops::session> ending;
  {
    std::unique_lock<std::shared_mutex> lock{gate_};
    ending = std::move(session_);
  }
}

bool session_handle::closed() {
  std::shared_lock<std::shared_mutex> lock{gate_};
  return !session_;
}

bool session_handle::in_process() {
  return run([](ops::session& s) { return s.in_process(); });
}

std::shared_ptr<session_handle> open_local(size_t shards, const std::string& store,
                                           int64_t timeout_ms) {
  if (shards == 0 || shards > 1024)
    raise(errc::invalid_argument, "shards=" + std::to_string(shards) + "; 1 to 1024");
  if (timeout_ms <= 0)
    raise(errc::invalid_argument, "timeout_ms must be positive");
  raise_if(check_store(store));
  ops::session_options opts;
  opts.name = "python";
  opts.shards = shards;
  opts.timeout = std::chrono::milliseconds{timeout_ms};
  auto s = [&] {
    py::gil_scoped_release release;
    return ops::session::open(opts);
  }();
  return std::make_shared<session_handle>(value_or_raise(std::move(s)), store);
}

std::shared_ptr<session_handle> open_cluster(const std::string& seed,
                                             const std::string& secret_file,
                                             const std::string& tls_dir, int64_t timeout_ms,
                                             size_t shards, const std::string& checkpoint_dir,
                                             const std::string& service) {
  if (!service.empty() && !checkpoint_dir.empty())
    raise(errc::invalid_argument, "checkpoint_dir: the shards of service '" + service +
                                    "' are its host's (darcy node --embedding-checkpoint-dir)");
  if (timeout_ms <= 0)
    raise(errc::invalid_argument, "timeout_ms must be positive");
  if (shards == 0 || shards > 1024)
    raise(errc::invalid_argument, "shards=" + std::to_string(shards) + "; 1 to 1024 a node");
  auto address = runtime::resolve_seed(seed);
  if (!address)
    raise(address.error());
  if (!secret_file.empty()) {
    auto secret = runtime::read_secret_file(secret_file);
    if (!secret)
      raise(secret.error());
    runtime::set_client_credential(runtime::credential_of(*secret));
  }
  if (!tls_dir.empty()) {
    auto files = runtime::read_tls_dir(tls_dir);
    if (!files)
      raise(files.error());
    runtime::set_process_tls(*files);
  }
  ops::session_options opts;
  opts.name = "python";
  opts.seed = *address;
  opts.shards = shards;
  opts.timeout = std::chrono::milliseconds{timeout_ms};
  opts.supervise_shards = !checkpoint_dir.empty();
  opts.shard_checkpoint_dir = checkpoint_dir;
  opts.embedding_service = service;
  auto s = [&]() -> caf::expected<std::unique_ptr<ops::session>> {
    py::gil_scoped_release release;
    auto opened = ops::session::open(opts);
    if (opened && !service.empty())
      if (auto master = (*opened)->embeddings(); !master) // the service must be there now
        return std::move(master.error());
    return opened;
  }();
  return std::make_shared<session_handle>(value_or_raise(std::move(s)), "memory");
}

void bind_session(py::module_& m) {
  py::class_<session_handle, std::shared_ptr<session_handle>>(m, "_Session")
    .def_static("local", &open_local, py::arg("shards"), py::arg("store"), py::arg("timeout_ms"))
    .def_static("connect", &open_cluster, py::arg("seed"), py::arg("secret_file"),
                py::arg("tls_dir"), py::arg("timeout_ms"), py::arg("shards"),
                py::arg("checkpoint_dir"), py::arg("service"))
    .def("close", &session_handle::close)
    .def_property_readonly("closed", &session_handle::closed)
    .def_property_readonly("in_process", &session_handle::in_process)
    .def_property_readonly("store", &session_handle::store)
    .def(
      "save",
      [](session_handle& h, const std::string& dir, int64_t step, uint32_t full_every) {
        raise_if(h.run([&](ops::session& s) {
          return ops::save(s, dir, {step, "", {}}, full_every);
        }));
      },
      py::arg("dir"), py::arg("step"), py::arg("full_every"))
    .def(
      "restore",
      [](session_handle& h, const std::string& dir) {
        auto restored = h.run([&](ops::session& s) { return ops::restore(s, dir); });
        return value_or_raise(std::move(restored)).state.step;
      },
      py::arg("dir"))
    .def(
      "write_torch_export",
      [](session_handle& h, const std::string& dir, const py::bytes& module,
         const std::string& spec, size_t keep) {
        std::string bytes = module;
        return value_or_raise(h.run(
          [&](ops::session& s) { return ops::write_torch_export(s, dir, bytes, spec, keep); }));
      },
      py::arg("dir"), py::arg("module"), py::arg("spec"), py::arg("keep"))
    .def(
      "restore_checkpoint",
      [](session_handle& h, const std::string& dir, const std::string& id) {
        raise_if(stores::make_current(stores::checkpoint_dir{dir}, id));
        auto restored = h.run([&](ops::session& s) { return ops::restore(s, dir); });
        if (!restored)
          raise_if(restored.error());
      },
      py::arg("dir"), py::arg("checkpoint"));
  m.def(
    "_read_torch_export",
    [](const std::string& dir) {
      auto e = value_or_raise(ops::read_torch_export(dir));
      return py::make_tuple(e.version, py::bytes(e.module), e.embeddings);
    },
    py::arg("dir"));
  m.def(
    "_write_torch_dense_sync",
    [](const std::string& dir, const py::bytes& module, const std::string& spec, int64_t step) {
      std::string bytes = module;
      return value_or_raise(ops::write_torch_dense_sync(dir, bytes, spec, step));
    },
    py::arg("dir"), py::arg("module"), py::arg("spec"), py::arg("step"));
  m.def(
    "_sync_message",
    [](const std::string& dir, const std::string& held_rows,
       const std::string& held_dense) -> py::object {
      auto m = value_or_raise(ops::online::read_sync(dir, held_rows, held_dense));
      if (m.rows.empty() && m.dense.empty())
        return py::none();
      return py::bytes(value_or_raise(ops::online::encode(m)));
    },
    py::arg("dir"), py::arg("held_rows"), py::arg("held_dense"));
  m.def(
    "_current_checkpoint",
    [](const std::string& dir) {
      return value_or_raise(stores::checkpoint_dir{dir}.read_manifest()).checkpoint;
    },
    py::arg("dir"));
}

} // namespace darcy::python
