#include "apps/chaos/soak.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <signal.h>

#include "apps/chaos/estimator_soak.hpp"
#include "apps/chaos/online_cluster_soak.hpp"
#include "apps/chaos/online_soak.hpp"
#include "apps/chaos/serving_soak.hpp"
#include "base/atomic_file.hpp"
#include "compute/stats.hpp"
#include "messages/error.hpp"
#include "ops/session.hpp"
#include "ops/testing/local_cluster.hpp"
#include "runtime/cluster/chaos.hpp"
#include "runtime/process/process.hpp"

namespace darcy::apps {

namespace {

namespace fs = std::filesystem;
using clock = std::chrono::steady_clock;

/// Three topics of seven words; each sentence draws from one of them.
const std::vector<std::vector<std::string>>& topics() {
  static const std::vector<std::vector<std::string>> t{
    {"cat", "dog", "pet", "fur", "paw", "tail", "bark"},
    {"car", "road", "wheel", "fuel", "drive", "lane", "brake"},
    {"sun", "moon", "star", "sky", "night", "orbit", "light"}};
  return t;
}

std::string write_topic_corpus(const std::string& dir, uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::ostringstream text;
  for (int s = 0; s < 6000; ++s) {
    auto& topic = topics()[rng() % topics().size()];
    for (int w = 0; w < 12; ++w)
      text << topic[rng() % topic.size()] << (w % 4 == 0 ? " the " : " ");
    text << "\n";
  }
  auto path = (fs::path{dir} / "corpus.txt").string();
  std::ofstream{path} << text.str();
  return path;
}

/// The share of topic words whose nearest neighbour (cosine, among the topic words) is of their
/// own topic, from word2vec's text format; -1 when the file cannot be read.
double topic_quality(const std::string& vectors) {
  std::ifstream in{vectors};
  size_t count = 0, dim = 0;
  if (!(in >> count >> dim))
    return -1;
  std::map<std::string, std::vector<double>> v;
  for (std::string word; in >> word;) {
    std::vector<double> x(dim);
    for (auto& f : x)
      in >> f;
    v[word] = std::move(x);
  }
  size_t right = 0, total = 0;
  for (size_t t = 0; t < topics().size(); ++t)
    for (auto& w : topics()[t]) {
      if (!v.count(w))
        continue;
      double best = -2;
      size_t best_topic = 0;
      for (size_t u = 0; u < topics().size(); ++u)
        for (auto& other : topics()[u]) {
          if (other == w || !v.count(other))
            continue;
          auto& a = v[w];
          auto& b = v[other];
          double dot = 0, na = 0, nb = 0;
          for (size_t i = 0; i < dim; ++i) {
            dot += a[i] * b[i];
            na += a[i] * a[i];
            nb += b[i] * b[i];
          }
          auto cosine = dot / std::sqrt(na * nb + 1e-30);
          if (cosine > best) {
            best = cosine;
            best_topic = u;
          }
        }
      right += best_topic == t;
      ++total;
    }
  return total == 0 ? -1 : double(right) / double(total);
}

/// The last loss of WALS's "loss per sweep:" line; NaN when there is none.
double final_wals_loss(const std::string& out) {
  auto at = out.find("loss per sweep:");
  if (at == std::string::npos)
    return std::nan("");
  std::istringstream line{out.substr(at + 15, out.find('\n', at) - at - 15)};
  double loss = std::nan(""), x = 0;
  while (line >> x)
    loss = x;
  return loss;
}

std::string read_text(const std::string& path) {
  auto text = base::read_file(path);
  return text ? *text : std::string{};
}

/// One run of the job: where it writes, and its command line.
struct job_run {
  std::string out;
  std::vector<std::string> argv;
  /// The files whose bytes a clean and a soaked run must share.
  std::vector<std::string> outputs;
};

job_run make_run(const soak_options& o, const std::string& binary, const std::string& input,
                 const std::string& name, const std::string& seed) {
  job_run r;
  r.out = (fs::path{o.dir} / name).string();
  if (o.job == "wals") {
    r.argv = {binary,
              "wals",
              "train",
              "--synthetic-rows",
              "60000",
              "--synthetic-cols",
              "30000",
              "--synthetic-nnz",
              "1500000",
              "--dim",
              "16",
              "--iters",
              "10",
              "--workers",
              "3",
              "--seed",
              std::to_string(o.seed),
              "--token-timeout-ms",
              "5000",
              "--timeout-ms",
              "5000",
              "--out",
              r.out,
              "--quiet",
              "--cluster",
              seed};
    r.outputs = {r.out + "/U.f32", r.out + "/V.f32"};
  } else if (o.job == "word2vec") {
    r.argv = {binary,
              "word2vec",
              "train",
              "--corpus",
              input,
              "--cluster",
              seed,
              "--shards",
              "1",
              "--dim",
              "16",
              "--epochs",
              "8",
              "--threads",
              "1",
              "--batch-words",
              "2000",
              "--checkpoint-every",
              "10",
              "--periodic-checkpoint",
              r.out + ".checkpoints",
              "--shard-retry-ms",
              "500",
              "--seed",
              std::to_string(o.seed),
              "--output",
              r.out + ".vec",
              "--quiet"};
    r.outputs = {r.out + ".vec"};
  } else {
    // MoE: experts on the nodes, the router here; its final loss is its output.
    r.argv = {binary,
              "moe",
              "train",
              "--cluster",
              seed,
              "--checkpoint",
              r.out + ".checkpoints",
              "--steps",
              "200",
              "--checkpoint-every",
              "20",
              "--seed",
              std::to_string(o.seed),
              "--timeout-ms",
              "5000",
              "--expert-retry-ms",
              "200",
              "--quiet"};
  }
  return r;
}

/// A number field of the last JSON line of `out` (moe train's summary); NaN when absent.
double json_field(const std::string& out, const std::string& field) {
  auto at = out.rfind("{\"");
  if (at == std::string::npos)
    return std::nan("");
  auto j = nlohmann::json::parse(out.substr(at), nullptr, false);
  if (j.is_discarded() || !j.contains(field) || !j[field].is_number())
    return std::nan("");
  return j[field].get<double>();
}

double quality_of(const soak_options& o, const job_run& r, const std::string& stdout_text) {
  if (o.job == "moe")
    return json_field(stdout_text, "final_loss");
  return o.job == "wals" ? final_wals_loss(stdout_text) : topic_quality(r.outputs.front());
}

/// A kill whose recovery is still awaited.
struct pending_recovery {
  clock::time_point at;
  std::string victim;
  std::string replacement;
  std::vector<std::string> services;
};

bool recovered(const cluster_status& st, const pending_recovery& p) {
  if (testing::state_of(st, p.replacement) != member_state::up)
    return false;
  for (auto& name : p.services) {
    bool back = false;
    for (auto& s : st.services)
      back = back || (s.name == name && s.node != p.victim &&
                      testing::state_of(st, s.node) == member_state::up);
    if (!back)
      return false;
  }
  return true;
}

} // namespace

caf::expected<soak_result> run_soak(const soak_options& o) {
  if (o.job != "wals" && o.job != "word2vec" && o.job != "moe" && o.job != "estimator" &&
      o.job != "ctr" && o.job != "serving" && o.job != "online" && o.job != "online-cluster")
    return make_error(errc::invalid_config, "soak: job '" + o.job +
                                              "' is not one it can run (wals, word2vec, moe, "
                                              "estimator, ctr, serving, online, online-cluster)");
  if (o.nodes < 2)
    return make_error(errc::invalid_config, "soak: at least 2 nodes (the seed is never killed)");
  disruption plan{o.drop, o.delay, o.delay_ms, o.seed};
  if (auto err = runtime::validate(plan))
    return err;
  auto binary = o.binary.empty() ? runtime::sibling_executable("darcy") : o.binary;
  std::error_code ec;
  fs::remove_all(o.dir, ec);
  fs::create_directories(o.dir, ec);
  if (ec)
    return make_error(errc::io_error, "soak: cannot create " + o.dir + ": " + ec.message());
  if (o.job == "estimator" || o.job == "ctr")
    return run_estimator_soak(o, binary);
  if (o.job == "serving")
    return run_serving_soak(o, binary);
  if (o.job == "online")
    return run_online_soak(o, binary);
  if (o.job == "online-cluster")
    return run_online_cluster_soak(o, binary);
  auto input = o.job == "word2vec" ? write_topic_corpus(o.dir, o.seed) : std::string{};
  soak_result result;

  // The clean run: the same job and seed on a cluster left alone.
  job_run clean;
  std::string clean_out;
  {
    auto c = start_soak_cluster(o, binary);
    if (!c)
      return std::move(c.error());
    clean = make_run(o, binary, input, "clean", to_string((*c)->seed()));
    soak_log(o, "clean run of " + o.job + " on " + std::to_string(o.nodes) + " nodes");
    auto start = clock::now();
    auto driver = runtime::child_process::start(clean.argv);
    if (!driver)
      return std::move(driver.error());
    driver->wait_for_line("\x01", std::chrono::minutes(30));
    auto code = driver->wait(std::chrono::seconds(30));
    if (!code || *code != 0)
      return make_error(errc::io_error, "soak: the clean run failed: " + driver->read_stderr());
    result.clean_seconds = compute::seconds_since(start);
    clean_out = driver->stdout_seen();
  }
  result.clean_quality = quality_of(o, clean, clean_out);

  // The soak.
  auto c = start_soak_cluster(o, binary);
  if (!c)
    return std::move(c.error());
  auto run = make_run(o, binary, input, "soaked", to_string((*c)->seed()));
  std::optional<runtime::child_process> driver;
  auto code = run_chaos(
    o, **c, result.clean_seconds,
    [&]() -> caf::expected<soak_job> {
      auto started = runtime::child_process::start(run.argv);
      if (!started)
        return std::move(started.error());
      driver.emplace(std::move(*started));
      return soak_job{[&](std::chrono::milliseconds wait) { return driver->wait(wait); },
                      [&] { return driver->read_stderr(); }, [&] { driver->signal(SIGKILL); }};
    },
    result);
  if (!code)
    return std::move(code.error());
  driver->wait_for_line("\x01", std::chrono::seconds(5));
  auto out = driver->stdout_seen();
  result.completed = *code && **code == 0;
  if (!result.completed && result.failure.empty())
    result.failure = "the job exited " + (*code ? std::to_string(**code) : std::string{"?"}) +
                     ": " + driver->read_stderr();
  if (o.job == "word2vec") {
    auto at = out.find("replaying ");
    if (at != std::string::npos)
      result.lost_work = std::stoull(out.substr(at + 10));
  } else if (o.job == "moe") {
    auto replayed = json_field(out, "replayed_steps");
    result.lost_work = std::isnan(replayed) ? 0 : static_cast<uint64_t>(replayed);
  } else {
    std::istringstream log{read_text(run.out + "/checkpoints/events.log")};
    for (std::string line; std::getline(log, line);)
      result.lost_work += line.find(" down ") != std::string::npos ||
                          line.find(" member_down ") != std::string::npos ||
                          line.find(" timeout ") != std::string::npos;
  }
  if (result.completed) {
    result.quality = quality_of(o, run, out);
    result.quality_delta = o.job == "word2vec"
                             ? result.quality - result.clean_quality
                             : (result.quality - result.clean_quality) / result.clean_quality;
    // MoE writes no file: its final loss, as printed, stands for its output.
    result.bit_equal = !run.outputs.empty() || result.quality == result.clean_quality;
    for (size_t i = 0; i < run.outputs.size(); ++i)
      result.bit_equal = result.bit_equal &&
                         read_text(run.outputs[i]) == read_text(clean.outputs[i]) &&
                         !read_text(run.outputs[i]).empty();
  }
  return result;
}

caf::expected<std::unique_ptr<testing::local_cluster>> start_soak_cluster(
  const soak_options& o, const std::string& binary) {
  return testing::local_cluster::start(
    {.nodes = o.nodes, .binary = binary, .name_prefix = "soak", .chaos = true});
}

caf::expected<std::optional<int>> run_chaos(
  const soak_options& o, testing::local_cluster& nodes, double clean_seconds,
  const std::function<caf::expected<soak_job>()>& start_job, soak_result& result) {
  disruption plan{o.drop, o.delay, o.delay_ms, o.seed};
  ops::session_options so;
  so.seed = nodes.seed();
  so.name = "soak-client";
  so.threads = 1;
  so.timeout = std::chrono::milliseconds(2000);
  auto client = ops::session::open(so);
  if (!client)
    return std::move(client.error());
  // Every node's gates drop and delay their share of messages, those spawned later included;
  // each node's counts are read while it lives.
  std::map<std::string, chaos_stats> node_counts;
  std::set<std::string> disrupted_nodes;
  std::mt19937_64 rng{o.seed};
  auto kill_at = kill_times(o, clean_seconds, rng);
  soak_log(o, "soaked run: " + std::to_string(o.kills) + " kills, " + std::to_string(o.drop) +
                " dropped, " + std::to_string(o.delay) + " delayed, seed " +
                std::to_string(o.seed));
  // Disrupted before the job starts: every actor spawned for it starts with the plan.
  for (size_t i = 0; i < nodes.size(); ++i)
    if (runtime::command_node((*client)->system(), (*client)->registry(), nodes.name(i),
                              {chaos_op::disrupt, plan}, (*client)->timeout()))
      disrupted_nodes.insert(nodes.name(i));
  auto start = clock::now();
  auto job = start_job();
  if (!job)
    return std::move(job.error());
  auto deadline = std::chrono::duration<double>(soak_deadline_s(o, clean_seconds));
  std::vector<pending_recovery> pending;
  std::vector<double> recover_s;
  auto next_poll = clock::now();
  std::optional<int> code;
  auto kill_due = [&] {
    return result.kills < kill_at.size() && compute::seconds_since(start) >= kill_at[result.kills];
  };
  while (!code) {
    if (auto exited = job->wait(std::chrono::milliseconds(20))) {
      code = *exited;
      break;
    }
    if (clock::now() - start > deadline) {
      auto err = job->last_messages();
      result.failure =
        "the job did not finish within " + std::to_string(int(deadline.count())) +
        " s; its last messages: " + err.substr(err.size() > 8000 ? err.size() - 8000 : 0);
      job->kill();
      break;
    }
    if (clock::now() < next_poll && !kill_due())
      continue;
    next_poll = clock::now() + std::chrono::milliseconds(250);
    auto st = (*client)->status();
    if (!st)
      continue;
    disrupt_members(**client, *st, plan, disrupted_nodes, node_counts);
    for (auto it = pending.begin(); it != pending.end();) {
      if (recovered(*st, *it)) {
        recover_s.push_back(compute::seconds_since(it->at));
        result.restarts += static_cast<uint32_t>(it->services.size());
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
    if (!kill_due())
      continue;
    std::vector<size_t> alive;
    for (size_t i = 1; i < nodes.size(); ++i)
      if (nodes.pid(i) > 0)
        alive.push_back(i);
    if (alive.empty())
      continue;
    auto victim = alive[rng() % alive.size()];
    pending_recovery p{clock::now(), nodes.name(victim), {}, {}};
    for (auto& svc : st->services)
      if (svc.node == p.victim)
        p.services.push_back(svc.name);
    if (auto err = nodes.kill(victim))
      continue;
    ++result.kills;
    result.kill_at_s.push_back(compute::seconds_since(start));
    soak_log(o, "killed " + p.victim + " at " + std::to_string(compute::seconds_since(start)) +
                  " s (" + std::to_string(p.services.size()) + " services)");
    if (auto added = nodes.add_node())
      p.replacement = nodes.name(*added);
    pending.push_back(std::move(p));
  }
  result.seconds = compute::seconds_since(start);
  for (auto& p : pending) // not recovered before the job ended: counted up to its end
    recover_s.push_back(compute::seconds_since(p.at));
  summarize(result, std::move(recover_s), node_counts);
  return code;
}

void soak_log(const soak_options& o, const std::string& line) {
  if (!o.quiet)
    std::cerr << "soak: " << line << std::endl;
}

double soak_deadline_s(const soak_options& o, double clean_seconds) {
  return o.timeout_s > 0 ? o.timeout_s : std::max(300.0, 10 * clean_seconds);
}

void summarize(soak_result& r, std::vector<double> recover_s,
               const std::map<std::string, chaos_stats>& counts) {
  for (auto& [name, c] : counts) {
    r.dropped += c.dropped;
    r.delayed += c.delayed;
  }
  if (recover_s.empty())
    return;
  std::sort(recover_s.begin(), recover_s.end());
  r.recover_p50_s = recover_s[recover_s.size() / 2];
  r.recover_max_s = recover_s.back();
}

std::vector<double> kill_times(const soak_options& o, double clean_seconds, std::mt19937_64& rng,
                               double from, double to) {
  std::uniform_real_distribution<double> when{from, to};
  std::vector<double> at;
  for (uint32_t k = 0; k < o.kills; ++k)
    at.push_back(when(rng) * clean_seconds);
  std::sort(at.begin(), at.end());
  return at;
}

void disrupt_members(ops::session& client, const cluster_status& st, const disruption& plan,
                     std::set<std::string>& disrupted, std::map<std::string, chaos_stats>& counts) {
  for (auto& m : st.members) {
    if (m.state != member_state::up)
      continue;
    auto op = disrupted.count(m.name) ? chaos_op::stats : chaos_op::disrupt;
    auto stats = runtime::command_node(client.system(), client.registry(), m.name, {op, plan},
                                       client.timeout());
    if (!stats)
      continue;
    disrupted.insert(m.name);
    if (op == chaos_op::disrupt)
      continue;
    auto& seen = counts[m.name + "@" + std::to_string(m.joined_ms)];
    seen.forwarded = std::max(seen.forwarded, stats->forwarded);
    seen.dropped = std::max(seen.dropped, stats->dropped);
    seen.delayed = std::max(seen.delayed, stats->delayed);
  }
}

nlohmann::json soak_metrics(const soak_options& o, const soak_result& r) {
  nlohmann::json m{{"completed", r.completed ? 1 : 0}, {"kills", r.kills},
                   {"restarts", r.restarts},           {"recover_p50_s", r.recover_p50_s},
                   {"recover_max_s", r.recover_max_s}, {"lost_work", r.lost_work},
                   {"quality_delta", r.quality_delta}};
  // The issue asks it of WALS; a one-thread word2vec run is deterministic too, so it says
  // whether the soaked vectors equal the clean run's. Asynchronous Estimator training is not.
  bool online = o.job == "online" || o.job == "online-cluster";
  if (o.job != "estimator" && o.job != "ctr" && !online)
    m["bit_equal"] = r.bit_equal ? 1 : 0;
  if (online) {
    m["training_kills"] = r.training_kills;
    m["ahead_answers"] = r.ahead_answers;
    m["stale_answers"] = r.stale_answers;
    m["stale_max_s"] = r.stale_max_s;
    m["caught_up_s"] = r.caught_up_s;
  }
  return m;
}

} // namespace darcy::apps
