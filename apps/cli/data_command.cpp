// `darcy data ctr`: a generated Criteo-format click file, the same format as the Kaggle and
// Terabyte sets, with each row's true click probability beside it.
#include <iomanip>
#include <iostream>
#include <memory>

#include "apps/cli/commands.hpp"
#include "messages/error.hpp"
#include "ops/ctr/ctr_data.hpp"

namespace darcy::apps {

void add_data_command(CLI::App& app, int& exit_code) {
  auto data = app.add_subcommand("data", "Generate data sets");
  data->require_subcommand(1);
  auto o = std::make_shared<ops::ctr::ctr_data_options>();
  auto ctr = data->add_subcommand(
    "ctr",
    "A Criteo-format TSV (label, 13 integer, 26 categorical fields) from a seeded "
    "teacher, and OUT.probs with each row's true click probability");
  ctr->add_option("--rows", o->rows, "Rows to write")->required();
  ctr->add_option("--out", o->out, "The TSV (gzip when it ends in .gz)")->required();
  add_choice<compute::ctr_profile>(
    ctr, "--profile", o->generator.profile,
    {{"kaggle", compute::ctr_profile::kaggle}, {"terabyte", compute::ctr_profile::terabyte}},
    "Cardinalities per field: Kaggle's, or Terabyte's capped at 40M ids");
  ctr->add_option("--fresh-rate", o->generator.fresh_rate,
                  "Share of categorical values that are ids never seen before");
  ctr->add_option("--max-ids", o->generator.max_ids,
                  "Cap every field's cardinality (0: the profile's); the same teacher");
  ctr->add_option("--seed", o->generator.seed, "Seed of the teacher and the rows");
  ctr->add_option("--first-row", o->first_row,
                  "First row of the stream (a held-out set: a later range, same seed)");
  ctr->callback([o, &exit_code] {
    auto s = ops::ctr::write_ctr_data(*o);
    if (!s) {
      exit_code = fail("data ctr", s.error());
      return;
    }
    std::cout << std::fixed << std::setprecision(4) << "wrote " << s->rows << " rows to " << o->out
              << " (" << to_string(o->generator.profile) << " profile, fresh rate "
              << o->generator.fresh_rate << "): click rate " << double(s->clicks) / double(s->rows)
              << ", Bayes-optimal AUC " << s->bayes_auc << "\n{\"rows\":" << s->rows
              << ",\"clicks\":" << s->clicks << ",\"bayes_auc\":" << std::setprecision(6)
              << s->bayes_auc << "}" << std::endl;
    exit_code = 0;
  });
}

} // namespace darcy::apps
