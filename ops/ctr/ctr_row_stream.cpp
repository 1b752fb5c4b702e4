#include "ops/ctr/ctr_row_stream.hpp"

#include <thread>

#include "ops/ctr/ctr_input.hpp"

namespace darcy::ops::ctr {

namespace {

class ctr_windows final : public online::row_stream {
public:
  ctr_windows(std::unique_ptr<ctr_stream> stream, bool can_skip, std::chrono::milliseconds poll)
    : stream_(std::move(stream)), can_skip_(can_skip), poll_(poll) {}

  caf::expected<online::window_rows> next_window(uint64_t rows) override {
    ctr_batch_builder window;
    bool ended = false;
    while (window.rows() < rows && !ended) {
      auto got = stream_->next(row_);
      if (!got)
        return std::move(got.error());
      if (*got == stream_state::row)
        window.add(row_);
      else if (*got == stream_state::ended)
        ended = true;
      else
        std::this_thread::sleep_for(poll_); // a file that has not grown yet
    }
    online::window_rows out{nullptr, window.rows(), ended};
    if (out.rows > 0) {
      auto b = window.take();
      out.table = std::make_shared<estimator::example_table>(
        estimator::example_table{std::move(b.features), std::move(b.labels)});
    }
    return out;
  }

  caf::expected<bool> skip(uint64_t rows) override {
    for (uint64_t skipped = 0; skipped < rows;) {
      auto got = stream_->next(row_);
      if (!got)
        return std::move(got.error());
      if (*got == stream_state::ended)
        return false;
      if (*got == stream_state::row)
        ++skipped;
      else
        std::this_thread::sleep_for(poll_);
    }
    return true;
  }

  bool can_skip() const override { return can_skip_; }

private:
  std::unique_ptr<ctr_stream> stream_;
  bool can_skip_;
  std::chrono::milliseconds poll_;
  stores::ctr_row row_;
};

} // namespace

std::unique_ptr<online::row_stream> ctr_row_stream(std::unique_ptr<ctr_stream> stream,
                                                   bool can_skip, std::chrono::milliseconds poll) {
  return std::make_unique<ctr_windows>(std::move(stream), can_skip, poll);
}

} // namespace darcy::ops::ctr
