// Process-wide metrics, rendered in the Prometheus text format (0.0.4) by every node's
// GET /metrics: counters, gauges and latency histograms keyed by name and labels, collectors
// that read a value at scrape time (a store's rows), and the curves a status page draws (a
// job's loss per step). Thread-safe: any actor or thread records while another renders.
//
//   auto lookups = runtime::process_metrics().counter(
//     "darcy_service_requests_total", "Requests handled", {{"service", "shard"}, {"op",
//     "lookup"}});
//   lookups->add();
//   std::string text = runtime::process_metrics().render();
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace darcy::runtime {

/// Label names and values, in the order they are rendered.
using metric_labels = std::vector<std::pair<std::string, std::string>>;

class metric_counter {
public:
  void add(uint64_t n = 1) noexcept { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
  std::atomic<uint64_t> value_{0};
};

class metric_gauge {
public:
  void set(double v) noexcept { value_.store(v, std::memory_order_relaxed); }
  double value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
  std::atomic<double> value_{0};
};

/// Latency in seconds, in fixed buckets from 100 us to 10 s (and +Inf).
class metric_histogram {
public:
  static constexpr std::array<double, 11> bounds{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                 0.01,   0.025,   0.1,    1.0,   10.0};
  void observe(double seconds) noexcept;
  /// Per bucket (not cumulative), the last one past every bound.
  std::array<uint64_t, bounds.size() + 1> buckets() const noexcept;
  uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
  double sum() const noexcept { return sum_.load(std::memory_order_relaxed); }

private:
  std::array<std::atomic<uint64_t>, bounds.size() + 1> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

/// What a collector reports at scrape time.
class metric_sink {
public:
  virtual ~metric_sink() = default;
  virtual void gauge(const std::string& name, const std::string& help, const metric_labels& labels,
                     double value) = 0;
};

using metric_collector = std::function<void(metric_sink&)>;

struct curve_point {
  double step = 0;
  double value = 0;
};

class metrics_registry {
public:
  /// Unregisters its collector when destroyed.
  class collector_handle {
  public:
    collector_handle() = default;
    collector_handle(metrics_registry* owner, uint64_t id) : owner_(owner), id_(id) {}
    collector_handle(collector_handle&& other) noexcept;
    collector_handle& operator=(collector_handle&& other) noexcept;
    ~collector_handle();

  private:
    metrics_registry* owner_ = nullptr;
    uint64_t id_ = 0;
  };

  /// The series `name{labels}`, created on first use and kept until remove(). Every series of
  /// one name must be of one kind; `help` is taken from the first.
  std::shared_ptr<metric_counter> counter(const std::string& name, const std::string& help,
                                          const metric_labels& labels = {});
  std::shared_ptr<metric_gauge> gauge(const std::string& name, const std::string& help,
                                      const metric_labels& labels = {});
  std::shared_ptr<metric_histogram> histogram(const std::string& name, const std::string& help,
                                              const metric_labels& labels = {});

  /// Forgets one series (of an actor that stopped); holders of it may go on recording.
  void remove(const std::string& name, const metric_labels& labels);

  /// Runs `collect` at every render until the handle is destroyed. It runs outside the
  /// registry's lock, possibly once more just after the handle is destroyed: it must capture
  /// only what outlives it (a weak_ptr to the state it reads, say).
  [[nodiscard]] collector_handle add_collector(metric_collector collect);

  /// Appends a point to curve `name`; the newest max_curve_points are kept.
  void record_curve(const std::string& name, double step, double value);
  std::map<std::string, std::vector<curve_point>> curves() const;
  static constexpr size_t max_curve_points = 1000;

  /// Every series of every name, collectors included, in the text format.
  std::string render() const;

  using series_values = std::vector<std::pair<metric_labels, double>>;

  /// For each of `names`, the value of each of its series (a counter's count, a gauge's value,
  /// a histogram's count), collectors included; the collectors run once.
  std::map<std::string, series_values> values(const std::vector<std::string>& names) const;

private:
  enum class kind : uint8_t { counter, gauge, histogram };
  struct series {
    std::shared_ptr<metric_counter> counter;
    std::shared_ptr<metric_gauge> gauge;
    std::shared_ptr<metric_histogram> histogram;
  };
  struct family {
    kind type = kind::counter;
    std::string help;
    std::map<metric_labels, series> members;
  };
  series& series_of(const std::string& name, const std::string& help, kind type,
                    const metric_labels& labels);
  void drop_collector(uint64_t id);

  mutable std::mutex mutex_;
  std::map<std::string, family> families_;
  std::map<uint64_t, metric_collector> collectors_;
  uint64_t next_collector_ = 1;
  std::map<std::string, std::vector<curve_point>> curves_;
};

/// The registry of this process, which its node's /metrics renders.
metrics_registry& process_metrics();

/// `labels` as rendered after a metric name: {a="x",b="y"}, with \, " and newlines escaped;
/// empty for no labels.
std::string render_labels(const metric_labels& labels);

} // namespace darcy::runtime
