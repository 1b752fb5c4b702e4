#include "ops/ctr/ctr_data.hpp"

#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "compute/estimator/metrics.hpp"
#include "messages/error.hpp"
#include "stores/data/ctr_file.hpp"

namespace darcy::ops::ctr {

caf::expected<ctr_data_summary> write_ctr_data(const ctr_data_options& o) {
  if (auto err = compute::validate(o.generator))
    return make_error(err);
  if (o.rows == 0 || o.out.empty())
    return make_error(errc::invalid_config, "ctr data: give --rows N (at least 1) and --out FILE");
  compute::ctr_generator gen{o.generator};
  auto out = stores::ctr_writer::open(o.out);
  if (!out)
    return std::move(out.error());
  auto probs_path = o.out + ".probs";
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> probs{std::fopen(probs_path.c_str(), "w"),
                                                        std::fclose};
  if (!probs)
    return make_error(errc::io_error, "cannot write " + probs_path);
  auto auc = *compute::estimator::streaming_metric::make(compute::estimator::metric_kind::auc_roc);
  ctr_data_summary s;
  s.teacher_bias = gen.bias();
  std::vector<double> scores, labels;
  auto fold = [&] {
    auto err = auc.update({scores, labels});
    scores.clear();
    labels.clear();
    return err;
  };
  bool written = true;
  for (uint64_t i = 0; i < o.rows; ++i) {
    auto row = gen.row(o.first_row + i);
    if (auto err = (*out)->write(row))
      return err;
    // The AUC is of the probabilities as the file holds them.
    double p = std::round(row.probability * 1e6) / 1e6;
    written = written && std::fprintf(probs.get(), "%.6f\n", p) > 0;
    scores.push_back(p);
    labels.push_back(row.label ? 1 : 0);
    s.clicks += row.label ? 1 : 0;
    if (scores.size() == 4096)
      if (auto err = fold())
        return make_error(err);
  }
  if (auto err = fold())
    return make_error(err);
  written = std::fclose(probs.release()) == 0 && written;
  if (!written)
    return make_error(errc::io_error, "cannot write " + probs_path);
  if (auto err = (*out)->close())
    return err;
  s.rows = o.rows;
  s.bayes_auc = auc.value();
  return s;
}

} // namespace darcy::ops::ctr
