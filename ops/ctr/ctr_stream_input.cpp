#include "ops/ctr/ctr_stream_input.hpp"

#include <sstream>
#include <thread>

#include "messages/error.hpp"

namespace darcy::ops::ctr {

using estimator::batch;
using estimator::input_fn;
using estimator::input_pipeline;

namespace {

class ctr_stream_pipeline final : public input_pipeline {
public:
  ctr_stream_pipeline(std::string source, ctr_stream_options stream, ctr_input_options o,
                      std::chrono::milliseconds poll)
    : source_(std::move(source)), stream_options_(stream), o_(o), poll_(poll) {}

  caf::error open() {
    auto s = open_ctr_stream(source_, stream_options_);
    if (!s)
      return std::move(s.error());
    stream_ = std::move(*s);
    rows_ = 0;
    ended_ = false;
    return {};
  }

  caf::expected<std::optional<batch>> next() override {
    ctr_batch_builder b;
    while (b.rows() < o_.batch_size) {
      auto got = read();
      if (!got)
        return std::move(got.error());
      if (!*got)
        break;
      b.add(row_);
    }
    if (b.rows() == 0)
      return std::optional<batch>{};
    return std::optional<batch>{b.take()};
  }

  std::string position() const override { return std::to_string(rows_); }

  caf::error seek(const std::string& position) override {
    std::istringstream in{position};
    uint64_t rows = 0;
    if (!(in >> rows) || in.peek() != EOF)
      return make_error(errc::invalid_argument,
                        "ctr stream input: bad position '" + position + "'");
    if (auto err = open())
      return err;
    // Row by row of the stream, every shard's: a position between two of this shard's rows
    // leaves the next one to next().
    while (rows_ < rows) {
      auto got = next_row();
      if (!got)
        return std::move(got.error());
      if (!*got)
        return make_error(errc::invalid_argument, "ctr stream input: position '" + position +
                                                    "' is past the end of " + source_);
    }
    return {};
  }

private:
  /// The stream's next row, whichever shard's, into row_ (counted in rows_), asking a stream
  /// that has not grown again every poll_; false once the stream ended.
  caf::expected<bool> next_row() {
    while (!ended_) {
      auto state = stream_->next(row_);
      if (!state)
        return std::move(state.error());
      if (*state == stream_state::waiting) {
        std::this_thread::sleep_for(poll_);
        continue;
      }
      if (*state == stream_state::ended)
        break;
      ++rows_;
      return true;
    }
    ended_ = true;
    return false;
  }

  /// The next row of the stream that is this shard's, into row_; false once the stream ended.
  caf::expected<bool> read() {
    for (;;) {
      if (o_.max_rows != 0 && rows_ >= o_.max_rows)
        return false;
      auto got = next_row();
      if (!got || !*got)
        return got;
      if ((rows_ - 1) % o_.shards == o_.shard)
        return true;
    }
  }

  std::string source_;
  ctr_stream_options stream_options_;
  ctr_input_options o_;
  std::chrono::milliseconds poll_;
  std::unique_ptr<ctr_stream> stream_;
  stores::ctr_row row_;
  /// Rows of the stream read, every shard's counted.
  uint64_t rows_ = 0;
  bool ended_ = false;
};

} // namespace

input_fn ctr_stream_input(std::string source, ctr_stream_options stream, ctr_input_options o,
                          std::chrono::milliseconds poll) {
  return [=]() -> caf::expected<std::unique_ptr<input_pipeline>> {
    if (o.batch_size == 0 || o.shards == 0 || o.shard >= o.shards)
      return make_error(errc::invalid_config,
                        "ctr stream input: batch_size must be > 0 and shard < shards");
    auto p = std::make_unique<ctr_stream_pipeline>(source, stream, o, poll);
    if (auto err = p->open())
      return err;
    return std::unique_ptr<input_pipeline>{std::move(p)};
  };
}

} // namespace darcy::ops::ctr
