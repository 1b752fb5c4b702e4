#include "python/src/local_cluster.hpp"

#include <pybind11/stl.h>

#include "python/src/errors.hpp"
#include "runtime/cluster/chaos.hpp"

namespace py = pybind11;

namespace darcy::python {

namespace {

py::dict counts(const chaos_stats& s) {
  py::dict d;
  d["forwarded"] = s.forwarded;
  d["dropped"] = s.dropped;
  d["delayed"] = s.delayed;
  return d;
}

} // namespace

cluster_handle::cluster_handle(testing::local_cluster_options opts) {
  auto started = [&] {
    py::gil_scoped_release release;
    return testing::local_cluster::start(std::move(opts));
  }();
  cluster_ = value_or_raise(std::move(started));
}

cluster_handle::~cluster_handle() {
  client_.reset();
  cluster_.reset();
}

testing::local_cluster& cluster_handle::cluster() {
  if (!cluster_)
    raise(errc::unavailable, "the local cluster is closed");
  return *cluster_;
}

size_t cluster_handle::index_of(const py::handle& node) {
  auto& c = cluster();
  if (py::isinstance<py::int_>(node)) {
    auto i = node.cast<int64_t>();
    if (i < 0 || static_cast<size_t>(i) >= c.size())
      raise(errc::unknown_node, "node " + std::to_string(i) + " of " + std::to_string(c.size()));
    return static_cast<size_t>(i);
  }
  if (!py::isinstance<py::str>(node))
    raise(errc::invalid_argument, "a node is its name or its index");
  auto name = node.cast<std::string>();
  for (size_t i = 0; i < c.size(); ++i)
    if (c.name(i) == name)
      return i;
  raise(errc::unknown_node, name);
}

ops::session& cluster_handle::client() {
  if (!client_) {
    ops::session_options opts;
    opts.seed = cluster().seed();
    opts.name = "python-cluster";
    opts.threads = 1;
    auto s = [&] {
      py::gil_scoped_release release;
      return ops::session::open(opts);
    }();
    client_ = value_or_raise(std::move(s));
  }
  return *client_;
}

std::string cluster_handle::seed() const {
  if (!cluster_)
    raise(errc::unavailable, "the local cluster is closed");
  return runtime::to_string(cluster_->seed());
}

py::list cluster_handle::names() const {
  py::list result;
  if (cluster_)
    for (size_t i = 0; i < cluster_->size(); ++i)
      result.append(cluster_->name(i));
  return result;
}

void cluster_handle::act(const py::handle& node,
                         const std::function<caf::error(testing::local_cluster&, size_t)>& f) {
  auto i = index_of(node);
  py::gil_scoped_release release;
  raise_if(f(*cluster_, i));
}

void cluster_handle::kill(const py::handle& node) {
  act(node, [](testing::local_cluster& c, size_t i) { return c.kill(i); });
}

void cluster_handle::pause(const py::handle& node) {
  act(node, [](testing::local_cluster& c, size_t i) { return c.pause(i); });
}

void cluster_handle::resume(const py::handle& node) {
  act(node, [](testing::local_cluster& c, size_t i) { return c.resume(i); });
}

void cluster_handle::stop(const py::handle& node) {
  act(node, [](testing::local_cluster& c, size_t i) { return c.stop(i); });
}

void cluster_handle::restart(const py::handle& node) {
  act(node, [](testing::local_cluster& c, size_t i) { return c.restart(i); });
}

std::string cluster_handle::add_node(const std::string& name,
                                     const std::vector<std::string>& args) {
  auto& c = cluster();
  auto added = [&] {
    py::gil_scoped_release release;
    return c.add_node(name, args);
  }();
  return c.name(value_or_raise(std::move(added)));
}

py::dict cluster_handle::disrupt(const std::string& target, bool node, double drop, double delay,
                                 int64_t delay_ms, uint64_t seed) {
  auto& s = client();
  chaos_command command{chaos_op::disrupt, {drop, delay, delay_ms, seed}};
  auto answer = [&] {
    py::gil_scoped_release release;
    return node ? runtime::command_node(s.system(), s.registry(), target, command, s.timeout())
                : runtime::command_gate(s.system(), s.registry(), target, command, s.timeout());
  }();
  return counts(value_or_raise(std::move(answer)));
}

py::dict cluster_handle::heal(const std::string& target, bool node) {
  auto& s = client();
  chaos_command command{chaos_op::heal, {}};
  auto answer = [&] {
    py::gil_scoped_release release;
    return node ? runtime::command_node(s.system(), s.registry(), target, command, s.timeout())
                : runtime::command_gate(s.system(), s.registry(), target, command, s.timeout());
  }();
  return counts(value_or_raise(std::move(answer)));
}

py::dict cluster_handle::status() {
  auto& c = cluster();
  auto st = [&] {
    py::gil_scoped_release release;
    return c.status();
  }();
  auto snapshot = value_or_raise(std::move(st));
  py::list members;
  for (auto& m : snapshot.members) {
    py::dict d;
    d["name"] = m.name;
    d["host"] = m.host;
    d["port"] = m.port;
    d["pid"] = m.pid;
    d["state"] = to_string(m.state);
    d["reason"] = m.reason;
    members.append(d);
  }
  py::list services;
  for (auto& s : snapshot.services) {
    py::dict d;
    d["name"] = s.name;
    d["node"] = s.node;
    services.append(d);
  }
  py::dict result;
  result["seed"] = snapshot.seed;
  result["members"] = members;
  result["services"] = services;
  return result;
}

void cluster_handle::close() {
  py::gil_scoped_release release;
  client_.reset();
  cluster_.reset();
}

void bind_local_cluster(py::module_& m) {
  py::class_<cluster_handle>(m, "_LocalCluster")
    .def(py::init([](size_t nodes, const std::string& binary, bool chaos,
                     const std::string& secret_file, const std::string& tls_dir,
                     const std::string& prefix, const std::vector<std::string>& plugins) {
           if (nodes == 0 || nodes > 64)
             raise(errc::invalid_argument, "nodes=" + std::to_string(nodes) + "; 1 to 64");
           testing::local_cluster_options o;
           o.nodes = nodes;
           o.binary = binary;
           o.chaos = chaos;
           o.secret_file = secret_file;
           o.tls_dir = tls_dir;
           o.name_prefix = prefix;
           for (auto& plugin : plugins)
             o.node_args.insert(o.node_args.end(), {"--plugin", plugin});
           return std::make_unique<cluster_handle>(std::move(o));
         }),
         py::arg("nodes"), py::arg("binary"), py::arg("chaos"), py::arg("secret_file"),
         py::arg("tls_dir"), py::arg("name_prefix"), py::arg("plugins"))
    .def_property_readonly("seed", &cluster_handle::seed)
    .def_property_readonly("names", &cluster_handle::names)
    .def("kill", &cluster_handle::kill)
    .def("pause", &cluster_handle::pause)
    .def("resume", &cluster_handle::resume)
    .def("stop", &cluster_handle::stop)
    .def("restart", &cluster_handle::restart)
    .def("add_node", &cluster_handle::add_node, py::arg("name"), py::arg("args"))
    .def("disrupt", &cluster_handle::disrupt)
    .def("heal", &cluster_handle::heal)
    .def("status", &cluster_handle::status)
    .def("close", &cluster_handle::close);
}

} // namespace darcy::python
