#include "ops/estimator/input.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <numeric>
#include <random>
#include <sstream>
#include <thread>

#include "compute/hash.hpp"
#include "messages/error.hpp"

namespace darcy::ops::estimator {

namespace {

using compute::estimator::feature_value;

size_t rows_of(const compute::estimator::feature_map& features, const matrix& labels) {
  if (!features.empty())
    return features.begin()->second.rows();
  return static_cast<size_t>(labels.rows());
}

class dataset final : public input_pipeline {
public:
  dataset(std::shared_ptr<const example_table> table, dataset_options o)
    : table_(std::move(table)), o_(o) {
    start_epoch();
  }

  caf::expected<std::optional<batch>> next() override {
    auto rows = table_->rows();
    while (true) {
      if (o_.epochs > 0 && epoch_ >= o_.epochs)
        return std::optional<batch>{};
      auto left = rows - offset_;
      if (left > 0 && (left >= o_.batch_size || !o_.drop_remainder))
        break;
      ++epoch_;
      offset_ = 0;
      start_epoch();
      if (rows == 0 || (o_.drop_remainder && rows < o_.batch_size))
        return std::optional<batch>{}; // nothing would ever come
    }
    auto n = std::min(o_.batch_size, rows - offset_);
    std::vector<size_t> which(order_.begin() + static_cast<long>(offset_),
                              order_.begin() + static_cast<long>(offset_ + n));
    offset_ += n;
    return std::optional<batch>{gather(*table_, which)};
  }

  std::string position() const override {
    return std::to_string(epoch_) + ":" + std::to_string(offset_);
  }

  caf::error seek(const std::string& position) override {
    std::istringstream in{position};
    uint64_t epoch = 0, offset = 0;
    char colon = 0;
    if (!(in >> epoch >> colon >> offset) || colon != ':' || in.peek() != EOF)
      return make_error(errc::invalid_argument, "dataset: bad position '" + position + "'");
    if (offset > table_->rows())
      return make_error(errc::invalid_argument,
                        "dataset: position '" + position + "' is past this dataset's " +
                          std::to_string(table_->rows()) +
                          " rows (a checkpoint of another job or data set?)");
    epoch_ = epoch;
    offset_ = offset;
    start_epoch();
    return {};
  }

private:
  void start_epoch() {
    order_.resize(table_->rows());
    std::iota(order_.begin(), order_.end(), size_t{0});
    if (o_.shuffle) {
      std::mt19937_64 rng{compute::mix64(o_.seed, epoch_)};
      std::shuffle(order_.begin(), order_.end(), rng);
    }
  }

  std::shared_ptr<const example_table> table_;
  dataset_options o_;
  uint64_t epoch_ = 0;
  size_t offset_ = 0;
  std::vector<size_t> order_;
};

class prefetcher final : public input_pipeline {
public:
  prefetcher(std::unique_ptr<input_pipeline> inner, size_t depth,
             std::function<void(const batch&)> on_read)
    : inner_(std::move(inner)),
      depth_(std::max<size_t>(depth, 1)),
      on_read_(std::move(on_read)),
      position_(inner_->position()) {
    start();
  }

  ~prefetcher() override { halt(); }

  caf::expected<std::optional<batch>> next() override {
    std::unique_lock<std::mutex> lock{mutex_};
    ready_.wait(lock, [&] { return !queue_.empty(); });
    auto item = std::move(queue_.front());
    queue_.pop_front();
    if (item.result && *item.result)
      position_ = std::move(item.position);
    else
      queue_.push_front({item.result ? caf::expected<std::optional<batch>>{std::optional<batch>{}}
                                     : caf::expected<std::optional<batch>>{item.result.error()},
                         position_}); // the end (or the error) stays
    space_.notify_one();
    return std::move(item.result);
  }

  std::string position() const override {
    std::lock_guard<std::mutex> lock{mutex_};
    return position_;
  }

  caf::error seek(const std::string& position) override {
    halt();
    queue_.clear();
    if (auto err = inner_->seek(position)) {
      start();
      return err;
    }
    position_ = inner_->position();
    start();
    return {};
  }

private:
  struct item {
    caf::expected<std::optional<batch>> result;
    std::string position;
  };

  void start() {
    stop_ = false;
    worker_ = std::thread{[this] {
      while (true) {
        {
          std::unique_lock<std::mutex> lock{mutex_};
          space_.wait(lock, [&] { return stop_ || queue_.size() < depth_; });
          if (stop_)
            return;
        }
        auto result = inner_->next();
        bool last = !result || !*result;
        // The batch is queued before on_read sees it: a trainer waiting for it does not wait
        // for on_read too. The queue holds the batch itself, so on_read reads a copy.
        std::shared_ptr<const batch> read;
        if (on_read_ && !last)
          read = std::make_shared<const batch>(**result);
        {
          std::lock_guard<std::mutex> lock{mutex_};
          // A batch with no other before it in the queue is taken at once: the trainer has
          // caught up with the reader, and on_read would come too late to help it.
          if (queue_.empty())
            read.reset();
          queue_.push_back({std::move(result), inner_->position()});
          ready_.notify_one();
        }
        if (last)
          return;
        if (read)
          on_read_(*read);
      }
    }};
  }

  void halt() {
    {
      std::lock_guard<std::mutex> lock{mutex_};
      stop_ = true;
    }
    space_.notify_all();
    if (worker_.joinable())
      worker_.join();
  }

  std::unique_ptr<input_pipeline> inner_;
  size_t depth_;
  std::function<void(const batch&)> on_read_;
  mutable std::mutex mutex_;
  std::condition_variable ready_, space_;
  std::deque<item> queue_;
  std::string position_;
  bool stop_ = false;
  std::thread worker_;
};

} // namespace

std::unique_ptr<input_pipeline> prefetch(std::unique_ptr<input_pipeline> inner, size_t depth,
                                         std::function<void(const batch&)> on_read) {
  return std::make_unique<prefetcher>(std::move(inner), depth, std::move(on_read));
}

size_t batch::rows() const {
  return rows_of(features, labels);
}

size_t example_table::rows() const {
  return rows_of(features, labels);
}

batch gather(const example_table& table, const std::vector<size_t>& which) {
  batch b;
  for (auto& [key, f] : table.features) {
    feature_value out;
    out.width = f.width;
    if (f.width > 0) {
      out.numbers.reserve(which.size() * f.width);
      for (auto r : which)
        out.numbers.insert(out.numbers.end(), f.numbers.begin() + static_cast<long>(r * f.width),
                           f.numbers.begin() + static_cast<long>((r + 1) * f.width));
    } else {
      for (auto r : which)
        out.strings.push_back(f.strings[r]);
    }
    b.features.emplace(key, std::move(out));
  }
  if (table.labels.rows() > 0) {
    b.labels.resize(static_cast<Eigen::Index>(which.size()), table.labels.cols());
    for (size_t i = 0; i < which.size(); ++i)
      b.labels.row(static_cast<Eigen::Index>(i)) =
        table.labels.row(static_cast<Eigen::Index>(which[i]));
  }
  return b;
}

caf::expected<std::unique_ptr<input_pipeline>> make_dataset(
  std::shared_ptr<const example_table> table, dataset_options options) {
  if (options.batch_size == 0)
    return make_error(errc::invalid_config, "dataset: batch_size must be at least 1");
  auto rows = table->rows();
  for (auto& [key, f] : table->features)
    if (f.rows() != rows || (f.width > 0 && f.numbers.size() % f.width != 0))
      return make_error(errc::invalid_config, "dataset: feature '" + key + "' has " +
                                                std::to_string(f.rows()) + " rows, not " +
                                                std::to_string(rows));
  if (table->labels.rows() > 0 && static_cast<size_t>(table->labels.rows()) != rows)
    return make_error(errc::invalid_config, "dataset: " + std::to_string(table->labels.rows()) +
                                              " labels for " + std::to_string(rows) + " rows");
  return std::unique_ptr<input_pipeline>{new dataset(std::move(table), options)};
}

caf::expected<batch> first_batch(const input_fn& input, const std::string& who) {
  auto pipeline = input();
  if (!pipeline)
    return std::move(pipeline.error());
  auto first = (*pipeline)->next();
  if (!first)
    return std::move(first.error());
  if (!*first)
    return make_error(errc::invalid_argument, who + ": the input is empty");
  return std::move(**first);
}

} // namespace darcy::ops::estimator
