#include "apps/estimator/summary_plot.hpp"

#include <fstream>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "apps/progress/plot.hpp"
#include "messages/error.hpp"

namespace darcy::estimator_apps {

namespace {

/// A line a killed writer cut short: the start of {"step": ...} that is not JSON.
bool torn(const std::string& line) {
  constexpr std::string_view start = R"({"step":)";
  return line.compare(0, start.size(), start) == 0 || start.compare(0, line.size(), line) == 0;
}

} // namespace

caf::expected<summary_plot> plot_summary(const std::string& jsonl, const std::string& out) {
  std::ifstream in{jsonl};
  if (!in)
    return make_error(errc::not_found, "no summary file " + jsonl);
  std::ostringstream table;
  table << "step\tloss\tseconds\n";
  summary_plot r;
  size_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty())
      continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() && torn(line)) {
      ++r.torn_lines;
      continue;
    }
    if (!j.is_object() || !j.contains("step") || !j["step"].is_number() || !j.contains("loss") ||
        !(j["loss"].is_number() || j["loss"].is_null()))
      return make_error(errc::corrupt_file, jsonl + " line " + std::to_string(line_no) +
                                              ": not a {\"step\", \"loss\"} object");
    if (j["loss"].is_null()) {
      ++r.non_finite;
      continue;
    }
    table << j["step"].get<double>() << '\t' << j["loss"].get<double>() << '\t'
          << (j.contains("seconds") && j["seconds"].is_number() ? j["seconds"].get<double>() : 0)
          << '\n';
    ++r.points;
  }
  if (r.points == 0)
    return make_error(errc::invalid_argument, jsonl + " holds no points");
  auto tsv = out + ".tsv", png = out + ".png";
  std::ofstream{tsv} << table.str();
  std::ostringstream gp;
  gp << "set terminal pngcairo size 900,500\nset output '" << png << "'\n"
     << "set title 'training loss'\nset xlabel 'step'\nset ylabel 'loss'\nset grid\n"
     << "set datafile separator '\\t'\n"
     << "plot '" << tsv << "' every ::1 using 1:2 with lines lw 2 title 'loss'\n";
  if (auto err = apps::draw_with_gnuplot(out + ".gp", gp.str(), png))
    return err;
  return r;
}

} // namespace darcy::estimator_apps
