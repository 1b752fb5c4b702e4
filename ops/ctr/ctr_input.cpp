#include "ops/ctr/ctr_input.hpp"

#include <sstream>

#include "messages/error.hpp"
#include "stores/data/ctr_file.hpp"

namespace darcy::ops::ctr {

using estimator::batch;
using estimator::example_table;
using estimator::input_fn;
using estimator::input_pipeline;
using estimator::matrix;

namespace {

namespace ce = compute::estimator;
using compute::ctr_cat_fields;
using compute::ctr_int_fields;

class ctr_pipeline final : public input_pipeline {
public:
  ctr_pipeline(std::string path, ctr_input_options o) : path_(std::move(path)), o_(o) {}

  caf::error open() {
    auto r = stores::ctr_reader::open(path_, o_.skip_malformed);
    if (!r)
      return std::move(r.error());
    reader_ = std::move(*r);
    rows_ = 0;
    return {};
  }

  caf::expected<std::optional<batch>> next() override {
    ctr_batch_builder b;
    bool restarted = false;
    while (b.rows() < o_.batch_size) {
      auto got = read();
      if (!got)
        return std::move(got.error());
      if (!*got) { // the end of a pass
        if (o_.epochs != 0 && pass_ + 1 >= o_.epochs)
          break;
        if (restarted && b.rows() == 0) // a pass of no rows: nothing would ever come
          return std::optional<batch>{};
        restarted = true;
        ++pass_;
        if (auto err = open())
          return err;
        continue;
      }
      b.add(row_);
    }
    if (b.rows() == 0)
      return std::optional<batch>{};
    return std::optional<batch>{b.take()};
  }

  std::string position() const override {
    return std::to_string(pass_) + ":" + std::to_string(rows_);
  }

  caf::error seek(const std::string& position) override {
    std::istringstream in{position};
    uint64_t pass = 0, rows = 0;
    char colon = 0;
    if (!(in >> pass >> colon >> rows) || colon != ':' || in.peek() != EOF)
      return make_error(errc::invalid_argument, "ctr input: bad position '" + position + "'");
    pass_ = pass;
    if (auto err = open())
      return err;
    while (rows_ < rows) {
      auto got = read();
      if (!got)
        return std::move(got.error());
      if (!*got)
        return make_error(errc::invalid_argument, "ctr input: position '" + position +
                                                    "' is past the " + std::to_string(rows_) +
                                                    " rows of " + path_ +
                                                    " (a checkpoint of another file?)");
    }
    return {};
  }

private:
  /// The next row of this pass that is this shard's, into row_; false at the pass's end.
  caf::expected<bool> read() {
    for (;;) {
      if (o_.max_rows != 0 && rows_ >= o_.max_rows)
        return false;
      auto got = reader_->next(row_);
      if (!got || !*got)
        return got;
      if (rows_++ % o_.shards == o_.shard)
        return true;
    }
  }

  std::string path_;
  ctr_input_options o_;
  std::unique_ptr<stores::ctr_reader> reader_;
  stores::ctr_row row_;
  uint64_t pass_ = 0;
  /// Rows read in this pass, every shard's counted.
  uint64_t rows_ = 0;
};

} // namespace

void ctr_batch_builder::add(const stores::ctr_row& row) {
  labels_.push_back(row.label ? 1.0f : 0.0f);
  for (size_t i = 0; i < ctr_int_fields; ++i)
    ints_.push_back(row.int_present[i] ? double(row.ints[i]) : 0.0);
  for (size_t f = 0; f < ctr_cat_fields; ++f) {
    auto& out = cats_[f].emplace_back();
    if (!row.cats[f].empty())
      out.emplace_back(row.cats[f]);
  }
}

batch ctr_batch_builder::take() {
  batch b;
  b.features[ctr_ints_key] = ce::feature_value::numeric(std::move(ints_), ctr_int_fields);
  for (size_t f = 0; f < ctr_cat_fields; ++f)
    b.features[ctr_field_key(f)] = ce::feature_value::categorical(std::move(cats_[f]));
  b.labels = Eigen::Map<matrix>(labels_.data(), static_cast<Eigen::Index>(labels_.size()), 1);
  *this = {};
  return b;
}

std::string ctr_field_key(size_t field) {
  return "C" + std::to_string(field + 1);
}

input_fn ctr_file_input(std::string path, ctr_input_options o) {
  return [path = std::move(path), o]() -> caf::expected<std::unique_ptr<input_pipeline>> {
    if (o.batch_size == 0 || o.shards == 0 || o.shard >= o.shards)
      return make_error(errc::invalid_config,
                        "ctr input: batch_size must be > 0 and shard < shards");
    auto p = std::make_unique<ctr_pipeline>(path, o);
    if (auto err = p->open())
      return err;
    return std::unique_ptr<input_pipeline>{std::move(p)};
  };
}

nlohmann::json ctr_instances(const example_table& t, const std::vector<uint32_t>& rows) {
  nlohmann::json instances = nlohmann::json::array();
  auto& ints = t.features.at(ctr_ints_key);
  for (auto r : rows) {
    nlohmann::json instance;
    instance[ctr_ints_key] = std::vector<double>(ints.numbers.begin() + r * ints.width,
                                                 ints.numbers.begin() + (r + 1) * ints.width);
    for (size_t f = 0; f < compute::ctr_cat_fields; ++f)
      instance[ctr_field_key(f)] = t.features.at(ctr_field_key(f)).strings[r];
    instances.push_back(std::move(instance));
  }
  return instances;
}

} // namespace darcy::ops::ctr
