#include "runtime/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace darcy::runtime {

namespace {

std::string number(double v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  std::ostringstream out;
  out.precision(12);
  out << v;
  return out.str();
}

std::string escape(const std::string& value, bool quote) {
  std::string out;
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && quote)
      out += "\\\"";
    else
      out += c;
  }
  return out;
}

metric_labels with(metric_labels labels, const std::string& name, const std::string& value) {
  labels.emplace_back(name, value);
  return labels;
}

/// Gathers what collectors report, by name.
struct gathered : metric_sink {
  struct entry {
    std::string help;
    std::vector<std::pair<metric_labels, double>> values;
  };
  std::map<std::string, entry> by_name;
  void gauge(const std::string& name, const std::string& help, const metric_labels& labels,
             double value) override {
    auto& e = by_name[name];
    if (e.help.empty())
      e.help = help;
    e.values.emplace_back(labels, value);
  }
};

} // namespace

void metric_histogram::observe(double seconds) noexcept {
  auto at = std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin();
  buckets_[static_cast<size_t>(at)].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(seconds, std::memory_order_relaxed);
}

std::array<uint64_t, metric_histogram::bounds.size() + 1> metric_histogram::buckets()
  const noexcept {
  std::array<uint64_t, bounds.size() + 1> result{};
  for (size_t i = 0; i < result.size(); ++i)
    result[i] = buckets_[i].load(std::memory_order_relaxed);
  return result;
}

metrics_registry::collector_handle::collector_handle(collector_handle&& other) noexcept
  : owner_(std::exchange(other.owner_, nullptr)), id_(other.id_) {
}

metrics_registry::collector_handle& metrics_registry::collector_handle::operator=(
  collector_handle&& other) noexcept {
  if (this != &other) {
    if (owner_)
      owner_->drop_collector(id_);
    owner_ = std::exchange(other.owner_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

metrics_registry::collector_handle::~collector_handle() {
  if (owner_)
    owner_->drop_collector(id_);
}

metrics_registry::series& metrics_registry::series_of(const std::string& name,
                                                      const std::string& help, kind type,
                                                      const metric_labels& labels) {
  auto& f = families_[name];
  if (f.members.empty() && f.help.empty()) {
    f.type = type;
    f.help = help;
  }
  auto& s = f.members[labels];
  if (!s.counter && !s.gauge && !s.histogram) {
    if (type == kind::counter)
      s.counter = std::make_shared<metric_counter>();
    else if (type == kind::gauge)
      s.gauge = std::make_shared<metric_gauge>();
    else
      s.histogram = std::make_shared<metric_histogram>();
  }
  return s;
}

std::shared_ptr<metric_counter> metrics_registry::counter(const std::string& name,
                                                          const std::string& help,
                                                          const metric_labels& labels) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto& s = series_of(name, help, kind::counter, labels);
  return s.counter ? s.counter : std::make_shared<metric_counter>();
}

std::shared_ptr<metric_gauge> metrics_registry::gauge(const std::string& name,
                                                      const std::string& help,
                                                      const metric_labels& labels) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto& s = series_of(name, help, kind::gauge, labels);
  return s.gauge ? s.gauge : std::make_shared<metric_gauge>();
}

std::shared_ptr<metric_histogram> metrics_registry::histogram(const std::string& name,
                                                              const std::string& help,
                                                              const metric_labels& labels) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto& s = series_of(name, help, kind::histogram, labels);
  return s.histogram ? s.histogram : std::make_shared<metric_histogram>();
}

void metrics_registry::remove(const std::string& name, const metric_labels& labels) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto f = families_.find(name);
  if (f == families_.end())
    return;
  f->second.members.erase(labels);
}

metrics_registry::collector_handle metrics_registry::add_collector(metric_collector collect) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto id = next_collector_++;
  collectors_.emplace(id, std::move(collect));
  return {this, id};
}

void metrics_registry::drop_collector(uint64_t id) {
  std::lock_guard<std::mutex> guard{mutex_};
  collectors_.erase(id);
}

void metrics_registry::record_curve(const std::string& name, double step, double value) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto& points = curves_[name];
  points.push_back({step, value});
  if (points.size() > max_curve_points)
    points.erase(points.begin(), points.begin() + (points.size() - max_curve_points));
}

std::map<std::string, std::vector<curve_point>> metrics_registry::curves() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return curves_;
}

std::string metrics_registry::render() const {
  std::vector<metric_collector> collectors;
  std::string out;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    for (auto& [id, collect] : collectors_)
      collectors.push_back(collect);
    for (auto& [name, f] : families_) {
      if (f.members.empty())
        continue;
      static const char* types[] = {"counter", "gauge", "histogram"};
      out += "# HELP " + name + " " + escape(f.help, false) + "\n";
      out += "# TYPE " + name + " " + types[static_cast<int>(f.type)] + "\n";
      for (auto& [labels, s] : f.members) {
        if (s.counter) {
          out += name + render_labels(labels) + " " + std::to_string(s.counter->value()) + "\n";
        } else if (s.gauge) {
          out += name + render_labels(labels) + " " + number(s.gauge->value()) + "\n";
        } else {
          auto buckets = s.histogram->buckets();
          uint64_t cumulative = 0;
          for (size_t i = 0; i < buckets.size(); ++i) {
            cumulative += buckets[i];
            auto le = i < metric_histogram::bounds.size() ? number(metric_histogram::bounds[i])
                                                          : std::string{"+Inf"};
            out += name + "_bucket" + render_labels(with(labels, "le", le)) + " " +
                   std::to_string(cumulative) + "\n";
          }
          out += name + "_sum" + render_labels(labels) + " " + number(s.histogram->sum()) + "\n";
          out += name + "_count" + render_labels(labels) + " " +
                 std::to_string(s.histogram->count()) + "\n";
        }
      }
    }
  }
  // Outside the lock: a collector may take its actor's lock, and that actor may be recording.
  gathered g;
  for (auto& collect : collectors)
    collect(g);
  for (auto& [name, e] : g.by_name) {
    out += "# HELP " + name + " " + escape(e.help, false) + "\n";
    out += "# TYPE " + name + " gauge\n";
    for (auto& [labels, value] : e.values)
      out += name + render_labels(labels) + " " + number(value) + "\n";
  }
  return out;
}

std::map<std::string, metrics_registry::series_values> metrics_registry::values(
  const std::vector<std::string>& names) const {
  std::map<std::string, series_values> result;
  std::vector<metric_collector> collectors;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    for (auto& [id, collect] : collectors_)
      collectors.push_back(collect);
    for (auto& name : names) {
      auto& out = result[name];
      if (auto f = families_.find(name); f != families_.end())
        for (auto& [labels, s] : f->second.members)
          out.emplace_back(labels, s.counter ? static_cast<double>(s.counter->value())
                                   : s.gauge ? s.gauge->value()
                                             : static_cast<double>(s.histogram->count()));
    }
  }
  gathered g;
  for (auto& collect : collectors)
    collect(g);
  for (auto& [name, out] : result)
    if (auto e = g.by_name.find(name); e != g.by_name.end())
      out.insert(out.end(), e->second.values.begin(), e->second.values.end());
  return result;
}

metrics_registry& process_metrics() {
  static metrics_registry registry;
  return registry;
}

std::string render_labels(const metric_labels& labels) {
  if (labels.empty())
    return {};
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0)
      out += ",";
    out += labels[i].first + "=\"" + escape(labels[i].second, true) + "\"";
  }
  return out + "}";
}

} // namespace darcy::runtime
