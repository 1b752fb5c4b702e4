#include "stores/embedding/redis_client.hpp"

#include <charconv>

#include <hiredis/hiredis.h>

#include "messages/error.hpp"

namespace darcy::stores {

namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

redis_reply convert(const redisReply* r) {
  redis_reply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.type = redis_reply::kind::string;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = redis_reply::kind::status;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = redis_reply::kind::error;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = redis_reply::kind::integer;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = redis_reply::kind::array;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i)
        out.elements.push_back(convert(r->element[i]));
      break;
    default:
      break;
  }
  return out;
}

std::string run_id_of(const std::string& info) {
  auto at = info.find("run_id:");
  if (at == std::string::npos)
    return {};
  auto end = info.find_first_of("\r\n", at);
  return info.substr(at + 7, end == std::string::npos ? std::string::npos : end - at - 7);
}

} // namespace

caf::expected<redis_location> parse_redis_location(const std::string& url) {
  auto bad = [&](const std::string& why) {
    return make_error(errc::invalid_config,
                      "'" + url + "' is not redis://HOST:PORT[/PREFIX][/shard-N]: " + why);
  };
  const std::string scheme = "redis://";
  if (url.compare(0, scheme.size(), scheme) != 0)
    return bad("it must start with redis://");
  auto rest = url.substr(scheme.size());
  auto slash = rest.find('/');
  auto authority = rest.substr(0, slash);
  auto colon = authority.rfind(':');
  redis_location out;
  out.host = authority.substr(0, colon);
  if (colon != std::string::npos) {
    auto port = authority.substr(colon + 1);
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc{} || end != port.data() + port.size() || value == 0 || value > 65535)
      return bad("bad port");
    out.port = static_cast<uint16_t>(value);
  }
  if (out.host.empty())
    return bad("no host");
  if (slash == std::string::npos)
    return out;
  auto path = rest.substr(slash + 1);
  const std::string shard_prefix = "shard-";
  auto last = path.rfind('/');
  auto tail = last == std::string::npos ? path : path.substr(last + 1);
  if (tail.compare(0, shard_prefix.size(), shard_prefix) == 0) {
    uint32_t shard = 0;
    auto digits = tail.substr(shard_prefix.size());
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), shard);
    if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size())
      return bad("bad shard number");
    out.shard = shard;
    path = last == std::string::npos ? std::string{} : path.substr(0, last);
  }
  if (!path.empty())
    out.prefix = path;
  return out;
}

redis_client::redis_client(redis_location where, std::chrono::milliseconds timeout)
  : where_(std::move(where)), address_(where_.address()), timeout_(timeout) {
}

redis_client::~redis_client() {
  if (context_)
    redisFree(context_);
}

caf::expected<std::unique_ptr<redis_client>> redis_client::connect(
  const redis_location& where, std::chrono::milliseconds timeout) {
  std::unique_ptr<redis_client> client{new redis_client(where, timeout)};
  if (auto err = client->open())
    return err;
  return client;
}

caf::error redis_client::open() {
  if (context_) {
    redisFree(context_);
    context_ = nullptr;
  }
  context_ = redisConnectWithTimeout(where_.host.c_str(), where_.port, to_timeval(timeout_));
  if (!context_ || context_->err) {
    std::string why = context_ ? context_->errstr : "out of memory";
    if (context_) {
      redisFree(context_);
      context_ = nullptr;
    }
    return make_error(errc::io_error, "redis at " + address_ + ": " + why);
  }
  redisSetTimeout(context_, to_timeval(timeout_));
  auto info = send({{"INFO", "server"}});
  if (!info)
    return std::move(info.error());
  auto id = run_id_of((*info)[0].str);
  if (!run_id_.empty() && id != run_id_)
    ++restarts_;
  run_id_ = id;
  return {};
}

caf::expected<std::vector<redis_reply>> redis_client::send(
  const std::vector<redis_command>& commands) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (auto& command : commands) {
    argv.clear();
    lens.clear();
    for (auto& arg : command) {
      argv.push_back(arg.data());
      lens.push_back(arg.size());
    }
    if (redisAppendCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lens.data()) !=
        REDIS_OK) {
      // Commands appended before it would go out with the next pipeline: start afresh.
      std::string why = context_->errstr;
      redisFree(context_);
      context_ = nullptr;
      return make_error(errc::io_error, "redis at " + address_ + ": " + why);
    }
  }
  std::vector<redis_reply> replies;
  replies.reserve(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(context_, &raw) != REDIS_OK || raw == nullptr) {
      std::string why = context_->err ? context_->errstr : "no reply";
      // The stream's position is unknown now: no later reply may be read from it.
      redisFree(context_);
      context_ = nullptr;
      return make_error(errc::io_error, "redis at " + address_ + ": " + why);
    }
    auto* reply = static_cast<redisReply*>(raw);
    replies.push_back(convert(reply));
    freeReplyObject(reply);
  }
  return replies;
}

caf::expected<std::vector<redis_reply>> redis_client::run(
  const std::vector<redis_command>& commands) {
  if (context_) {
    auto replies = send(commands);
    if (replies || context_)
      return replies;
  }
  if (auto err = open())
    return err;
  return send(commands);
}

caf::expected<redis_reply> redis_client::call(const redis_command& command) {
  auto replies = run({command});
  if (!replies)
    return std::move(replies.error());
  auto& reply = (*replies)[0];
  if (reply.type == redis_reply::kind::error)
    return make_error(errc::io_error,
                      "redis at " + address_ + ": " + command[0] + ": " + reply.str);
  return std::move(reply);
}

} // namespace darcy::stores
