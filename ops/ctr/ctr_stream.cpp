#include "ops/ctr/ctr_stream.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <optional>

#include "messages/error.hpp"

namespace darcy::ops::ctr {

namespace {

class line_stream final : public ctr_stream {
public:
  line_stream(std::istream& in, std::string name, bool follow, bool skip_malformed,
              std::unique_ptr<std::istream> owned = {})
    : owned_(std::move(owned)),
      in_(in),
      name_(std::move(name)),
      follow_(follow),
      skip_malformed_(skip_malformed) {}

  caf::expected<stream_state> next(stores::ctr_row& row) override {
    for (;;) {
      // A line counts once its newline is there: a writer may be halfway through it.
      std::string piece;
      std::getline(in_, piece);
      bool complete = !in_.eof();
      line_ += piece;
      if (!complete) {
        in_.clear();
        if (!follow_ && line_.empty())
          return stream_state::ended;
        if (follow_)
          return stream_state::waiting;
      }
      current_ = std::move(line_);
      line_.clear();
      ++lines_;
      auto why = stores::parse_ctr_line(current_, row);
      if (why.empty())
        return stream_state::row;
      if (!skip_malformed_)
        return make_error(errc::corrupt_file, name_ + ":" + std::to_string(lines_) + ": " + why);
      ++skipped_;
    }
  }

  uint64_t skipped() const override { return skipped_; }

private:
  std::unique_ptr<std::istream> owned_;
  std::istream& in_;
  std::string name_;
  bool follow_;
  bool skip_malformed_;
  /// The part of a line read before its newline came.
  std::string line_;
  /// The line `row` views.
  std::string current_;
  uint64_t lines_ = 0;
  uint64_t skipped_ = 0;
};

class generated_stream final : public ctr_stream {
public:
  explicit generated_stream(ctr_stream_options o) : o_(std::move(o)) {}

  caf::expected<stream_state> next(stores::ctr_row& row) override {
    if (o_.rows != 0 && index_ >= o_.rows)
      return stream_state::ended;
    auto phase = o_.drift_rows == 0 ? 0 : index_ / o_.drift_rows;
    if (!generator_ || phase != phase_) {
      auto g = o_.generator;
      g.teacher_phase = phase;
      g.fresh_rate = std::min(1.0, g.fresh_rate + o_.fresh_step * double(phase));
      generator_.emplace(g);
      phase_ = phase;
    }
    line_.clear();
    stores::append_ctr_line(generator_->row(index_++), line_);
    auto why = stores::parse_ctr_line(line_, row);
    if (!why.empty())
      return make_error(errc::corrupt_file, "generated row " + std::to_string(index_) + ": " + why);
    return stream_state::row;
  }

private:
  ctr_stream_options o_;
  std::optional<compute::ctr_generator> generator_;
  uint64_t phase_ = 0;
  uint64_t index_ = 0;
  std::string line_;
};

} // namespace

std::unique_ptr<ctr_stream> ctr_line_stream(std::istream& in, std::string name, bool follow,
                                            bool skip_malformed) {
  return std::make_unique<line_stream>(in, std::move(name), follow, skip_malformed);
}

caf::expected<std::unique_ptr<ctr_stream>> open_ctr_stream(const std::string& source,
                                                           const ctr_stream_options& o) {
  if (source == "generate") {
    if (auto err = compute::validate(o.generator))
      return make_error(err);
    if (!(o.fresh_step >= 0 && o.fresh_step <= 1))
      return make_error(errc::invalid_config, "ctr stream: fresh_step must be in [0, 1]");
    return std::unique_ptr<ctr_stream>{std::make_unique<generated_stream>(o)};
  }
  if (source == "-")
    return ctr_line_stream(std::cin, "standard input", false, o.skip_malformed);
  auto file = std::make_unique<std::ifstream>(source);
  if (!*file)
    return make_error(errc::io_error, "cannot open " + source);
  auto& in = *file;
  return std::unique_ptr<ctr_stream>{
    std::make_unique<line_stream>(in, source, true, o.skip_malformed, std::move(file))};
}

} // namespace darcy::ops::ctr
