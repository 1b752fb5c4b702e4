#include "apps/examples/logreg/logreg_trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <unordered_map>

#include <caf/send.hpp>

#include "messages/error.hpp"
#include "runtime/system_config.hpp"

namespace darcy::examples {

namespace {

using trainer_pointer = logreg_trainer_actor::stateful_pointer<logreg_trainer_state>;

constexpr auto service_timeout = std::chrono::seconds(30);

// The unique keys of examples [first, last), and each key's position among them.
struct batch_keys {
  std::vector<std::string> keys;
  std::unordered_map<std::string, size_t> index;
};

batch_keys keys_of(const std::vector<labelled_example>& examples, size_t first, size_t last) {
  batch_keys b;
  for (size_t i = first; i < last; ++i)
    for (auto& key : examples[i].keys)
      if (b.index.emplace(key, b.keys.size()).second)
        b.keys.push_back(key);
  return b;
}

void report(trainer_pointer self, bool done) {
  auto& st = self->state;
  auto n = static_cast<double>(st.examples.size());
  logreg_progress p{st.epoch, st.loss_sum / n, static_cast<double>(st.correct) / n, done,
                    runtime::node_name(self->system())};
  if (st.config.listener)
    caf::anon_send(st.config.listener, std::move(p));
}

// Predicts every example of the batch with `weights` (one per key), adds its loss and whether
// it was right to the epoch's sums, and returns the mean log loss's gradient per key.
std::vector<float> gradients(trainer_pointer self, const batch_keys& b, size_t first, size_t last,
                             const std::vector<float>& weights) {
  auto& st = self->state;
  std::vector<float> grads(b.keys.size(), 0.0f);
  auto scale = 1.0f / static_cast<float>(last - first);
  for (size_t i = first; i < last; ++i) {
    auto& example = st.examples[i];
    double z = 0;
    for (auto& key : example.keys)
      z += weights[b.index.at(key)];
    double p = 1 / (1 + std::exp(-z));
    st.loss_sum -=
      example.label > 0 ? std::log(std::max(p, 1e-12)) : std::log(std::max(1 - p, 1e-12));
    st.correct += (p >= 0.5) == (example.label > 0) ? 1 : 0;
    auto g = static_cast<float>(p - example.label) * scale;
    for (auto& key : example.keys)
      grads[b.index.at(key)] += g;
  }
  return grads;
}

// After a batch: the next one, the next epoch, or the end.
void advance(trainer_pointer self, size_t last) {
  auto& st = self->state;
  st.next = last;
  if (st.next < st.examples.size()) {
    self->send(self, step_atom::value);
    return;
  }
  ++st.epoch;
  bool done = st.epoch >= st.config.epochs;
  report(self, done);
  if (done)
    return self->quit();
  st.next = 0;
  st.loss_sum = 0;
  st.correct = 0;
  self->send(self, step_atom::value);
}

void step(trainer_pointer self) {
  auto& st = self->state;
  auto first = st.next;
  auto last = std::min(first + st.config.batch, st.examples.size());
  auto b = std::make_shared<batch_keys>(keys_of(st.examples, first, last));
  auto fail = [self](const caf::error& err) { self->quit(err); };
  self->request(st.config.master, service_timeout, lookup_atom::value, st.config.embedding, b->keys)
    .then(
      [=](const std::vector<float>& weights) {
        auto grads = gradients(self, *b, first, last, weights);
        auto& st = self->state;
        self
          ->request(st.config.master, service_timeout, update_atom::value, st.config.embedding,
                    b->keys, std::move(grads), ++st.step)
          .then([=](ok_atom) { advance(self, last); }, fail);
      },
      fail);
}

} // namespace

logreg_trainer_actor::behavior_type logreg_trainer(trainer_pointer self, logreg_config config) {
  auto& st = self->state;
  st.config = std::move(config);
  auto examples = read_examples(st.config.data, st.config.buckets);
  if (!examples) {
    self->quit(examples.error());
    return {[](step_atom) {}};
  }
  st.examples = std::move(*examples);
  st.config.batch = std::max<uint32_t>(st.config.batch, 1);
  self->send(self, step_atom::value);
  return {[self](step_atom) { step(self); }};
}

void register_logreg_types(runtime::system_config& cfg) {
  cfg.add_message_type<logreg_config>("examples.logreg_config")
    .add_message_type<logreg_progress>("examples.logreg_progress");
  cfg.add_actor_type(logreg_trainer_name, logreg_trainer);
}

} // namespace darcy::examples
