#include "actors/serving/root_items.hpp"

#include <chrono>

#include "messages/error.hpp"

namespace darcy::actors {

namespace {

/// An add waits this long for each shard's confirmation.
constexpr auto add_timeout = std::chrono::seconds(10);

/// The most items one add takes.
constexpr size_t max_items_an_add = 10000;

/// An add whose shards have not all confirmed.
struct open_add {
  std::shared_ptr<served_version> version;
  caf::typed_response_promise<add_items_response> promise;
  add_items_response response;
  std::vector<std::string> names;
  /// The items each shard was sent (empty for shards that hold none of them).
  std::vector<shard_items> by_shard;
  size_t open = 0;
  bool failed = false;
};

// Why a new item named `name` cannot join `v`, or an empty error.
caf::error refusal(const served_version& v, const std::string& name,
                   const std::unordered_set<std::string>& in_request) {
  if (name.empty())
    return make_error(errc::invalid_argument, "a new item needs a name");
  if (v.root->has_item(name) || v.added_ids.count(name) || v.adding.count(name))
    return make_error(errc::invalid_argument,
                      "item '" + name + "' is already in version " + v.version);
  if (in_request.count(name))
    return make_error(errc::invalid_argument, "item '" + name + "' is given twice");
  return {};
}

// Names the items of `add` in answers and keeps them for restarted shards.
void commit(serving_root_pointer self, open_add& add) {
  auto& v = *add.version;
  for (size_t i = 0; i < add.names.size(); ++i) {
    v.adding.erase(add.names[i]);
    v.added_names.emplace(add.response.ids[i], add.names[i]);
    v.added_ids.emplace(add.names[i], add.response.ids[i]);
  }
  for (size_t s = 0; s < add.by_shard.size(); ++s) {
    auto& kept = v.added_by_shard[s];
    auto& sent = add.by_shard[s];
    kept.ids.insert(kept.ids.end(), sent.ids.begin(), sent.ids.end());
    kept.vectors.insert(kept.vectors.end(), sent.vectors.begin(), sent.vectors.end());
  }
  log_event(self, std::to_string(add.names.size()) + " item(s) added to version " + v.version +
                    ", " + std::to_string(v.added_names.size()) + " in all");
}

void fail(open_add& add, const caf::error& err) {
  add.failed = true;
  for (auto& name : add.names)
    add.version->adding.erase(name);
  add.promise.deliver(err);
}

} // namespace

caf::result<add_items_response> add_items(serving_root_pointer self,
                                          const add_items_request& request, double now_s) {
  auto& st = self->state;
  if (auto err = st.access.admit(request.context, access_action::manage, now_s))
    return err;
  if (!st.current)
    return make_error(errc::unavailable, "model " + st.config.model + " has no version serving");
  auto v = st.current;
  if (request.items.empty())
    return make_error(errc::invalid_argument, "no items to add");
  if (request.items.size() > max_items_an_add)
    return make_error(errc::invalid_argument, std::to_string(request.items.size()) +
                                                " items in one add; at most " +
                                                std::to_string(max_items_an_add));
  auto shards = static_cast<uint32_t>(v->shards.size());
  auto add = std::make_shared<open_add>();
  add->version = v;
  add->by_shard.resize(shards);
  add->response.version = v->version;
  std::unordered_set<std::string> in_request;
  // Everything is checked and projected before any shard is asked.
  for (auto& item : request.items) {
    if (auto err = refusal(*v, item.name, in_request))
      return err;
    in_request.insert(item.name);
    auto vector = v->root->project_item(item);
    if (!vector)
      return std::move(vector.error());
    auto id = v->next_item + add->names.size();
    auto shard = static_cast<uint32_t>(id % shards);
    add->names.push_back(item.name);
    add->response.ids.push_back(id);
    add->response.shards.push_back(shard);
    add->by_shard[shard].ids.push_back(id);
    add->by_shard[shard].vectors.insert(add->by_shard[shard].vectors.end(), vector->begin(),
                                        vector->end());
  }
  for (uint32_t s = 0; s < shards; ++s)
    if (!add->by_shard[s].ids.empty() && !v->shards[s])
      return make_error(errc::unavailable, "shard " + std::to_string(s) + " of version " +
                                             v->version + " is down; nothing was added");
  // Ids are given for good: an add that fails leaves its ids unused, never served.
  v->next_item += add->names.size();
  v->adding.insert(add->names.begin(), add->names.end());
  add->promise = self->make_response_promise<add_items_response>();
  for (uint32_t s = 0; s < shards; ++s) {
    if (add->by_shard[s].ids.empty())
      continue;
    ++add->open;
    self->request(v->shards[s], add_timeout, add_atom::value, add->by_shard[s])
      .then(
        [self, add](ok_atom) {
          if (add->failed || --add->open > 0)
            return;
          commit(self, *add);
          add->promise.deliver(add->response);
        },
        [add, s](caf::error& err) {
          if (add->failed)
            return;
          fail(*add, make_error(errc::unavailable, "shard " + std::to_string(s) +
                                                     " did not take the items: " + render(err)));
        });
  }
  return add->promise;
}

void resend_items(serving_root_pointer self, const std::shared_ptr<served_version>& v,
                  uint32_t shard) {
  if (shard >= v->added_by_shard.size() || v->added_by_shard[shard].ids.empty())
    return;
  auto count = v->added_by_shard[shard].ids.size();
  self->request(v->shards[shard], add_timeout, add_atom::value, v->added_by_shard[shard])
    .then(
      [self, v, shard, count](ok_atom) {
        log_event(self, "shard " + std::to_string(shard) + " of version " + v->version +
                          " got its " + std::to_string(count) + " added item(s) again");
      },
      [self, v, shard](caf::error& err) {
        // The server exited again; its next start sends them again.
        log_event(self, "shard " + std::to_string(shard) + " of version " + v->version +
                          " did not take its added items: " + render(err));
      });
}

void drop_unconfirmed(const served_version& v, std::vector<std::vector<compute::hit>>& hits) {
  for (auto& of_shard : hits)
    std::erase_if(of_shard, [&](const compute::hit& h) {
      return h.id >= v.root->config().items && !v.added_names.count(h.id);
    });
}

std::optional<std::string> served_item_name(const served_version& v, uint64_t id) {
  if (id < v.root->config().items)
    return v.root->item_name(id);
  if (auto it = v.added_names.find(id); it != v.added_names.end())
    return it->second;
  return std::nullopt;
}

} // namespace darcy::actors
