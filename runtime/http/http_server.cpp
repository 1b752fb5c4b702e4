#include "runtime/http/http_server.hpp"

#include <algorithm>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "runtime/thread_systems.hpp"

namespace darcy::runtime {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

std::string json_error(const std::string& code, const std::string& message) {
  nlohmann::json j;
  j["error"] = {{"code", code}, {"message", message}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool is_loopback_address(const std::string& address) {
  beast::error_code ec;
  auto a = net::ip::make_address(address, ec);
  if (ec)
    return false;
  if (a.is_v6() && a.to_v6().is_v4_mapped())
    return net::ip::make_address_v4(net::ip::v4_mapped, a.to_v6()).is_loopback();
  return a.is_loopback();
}

namespace {

/// An idle keep-alive connection, or one that sends too slowly, is closed after this.
constexpr std::chrono::seconds read_timeout{60};
constexpr size_t header_limit = 16 * 1024;
constexpr size_t read_chunk = 64 * 1024;

class connection : public std::enable_shared_from_this<connection> {
public:
  /// `server` owns the io_context the socket lives on; a responder keeps it alive (see
  /// on_read), so that a late answer never touches a destroyed io_context.
  connection(tcp::socket&& socket, const http_handler& handler, const http_server_options& options,
             std::weak_ptr<void> server)
    : stream_(std::move(socket)),
      handler_(handler),
      options_(options),
      max_body_(options.max_body_bytes),
      server_(std::move(server)) {
    // Beast reads at most the buffer's free capacity (512 bytes when it has none): a body of
    // megabytes would take thousands of reads.
    buffer_.reserve(read_chunk);
  }

  void run() {
    beast::error_code ignored;
    stream_.socket().set_option(tcp::no_delay{true}, ignored);
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&connection::read, shared_from_this()));
  }

private:
  /// The header first, under the larger of the two limits (Beast checks a Content-Length
  /// against it as soon as the header is parsed), then the body under its target's.
  void read() {
    parser_.emplace();
    max_body_ = options_.max_body_bytes;
    parser_->body_limit(std::max(options_.max_body_bytes, options_.max_large_body_bytes));
    parser_->header_limit(header_limit);
    stream_.expires_after(read_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&connection::on_header, shared_from_this()));
  }

  void on_header(beast::error_code ec, size_t) {
    if (ec)
      return on_read(ec, 0);
    auto target = parser_->get().target();
    if (options_.large_body && options_.large_body({target.data(), target.size()}))
      max_body_ = std::max(options_.max_body_bytes, options_.max_large_body_bytes);
    if (auto length = parser_->content_length(); length && *length > max_body_)
      return on_read(http::error::body_limit, 0);
    parser_->body_limit(max_body_);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&connection::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, size_t) {
    if (ec == http::error::end_of_stream || ec == net::error::eof || ec == beast::error::timeout ||
        ec == net::error::operation_aborted)
      return close();
    if (ec == http::error::body_limit)
      return refuse(413, "body_too_large",
                    "the body is over the limit of " + std::to_string(max_body_) + " bytes");
    if (ec == http::error::header_limit)
      return refuse(431, "headers_too_large", "the headers are over 16 KiB");
    if (ec && ec.category() == http::make_error_code(http::error::bad_method).category())
      return refuse(400, "malformed_request", "malformed HTTP request: " + ec.message());
    if (ec)
      return close();
    auto& req = parser_->get();
    version_ = req.version();
    keep_alive_ = req.keep_alive();
    http_request r;
    r.method = std::string{req.method_string()};
    r.target = std::string{req.target()};
    r.authorization = std::string{req[http::field::authorization]};
    r.app = std::string{req["X-Darcy-App"]};
    r.trace_id = std::string{req["X-Trace-Id"]};
    r.body = std::move(req.body());
    beast::error_code peer_ec;
    auto remote = stream_.socket().remote_endpoint(peer_ec);
    if (!peer_ec)
      r.peer = remote.address().to_string();
    // Members are destroyed last to first: the connection (and its socket) before the
    // server that owns the io_context.
    struct owners {
      std::shared_ptr<void> server;
      std::shared_ptr<connection> self;
    };
    auto keep = std::make_shared<owners>(owners{server_.lock(), shared_from_this()});
    handler_(std::move(r), [keep](http_response response) {
      auto self = keep->self;
      net::post(self->stream_.get_executor(), [self, response = std::move(response)]() mutable {
        self->write(std::move(response), false);
      });
    });
    // The handler may have used an actor system (a model's): this thread, idle or busy with
    // the next request, must not hold up that system's destructor.
    let_go_of_actor_systems();
  }

  // Answers a request the server could not parse, then closes: the stream's position is lost.
  void refuse(unsigned status, const std::string& code, const std::string& message) {
    keep_alive_ = false;
    write({status, json_error(code, message)}, true);
  }

  void write(http_response r, bool close_after) {
    auto res = std::make_shared<http::response<http::string_body>>(
      static_cast<http::status>(r.status), version_ == 0 ? 11 : version_);
    res->set(http::field::server, "darcy");
    res->set(http::field::content_type, r.content_type);
    res->keep_alive(keep_alive_ && !close_after);
    res->body() = std::move(r.body);
    res->prepare_payload();
    auto self = shared_from_this();
    http::async_write(stream_, *res, [self, res](beast::error_code ec, size_t) {
      if (ec || !res->keep_alive())
        return self->close();
      self->read();
    });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const http_handler& handler_;
  const http_server_options& options_;
  /// The limit of the request being read.
  size_t max_body_;
  std::weak_ptr<void> server_;
  unsigned version_ = 11;
  bool keep_alive_ = false;
};

} // namespace

struct http_server::impl : std::enable_shared_from_this<http_server::impl> {
  impl(size_t threads, http_handler h, http_server_options o)
    : ioc(static_cast<int>(threads)),
      accept_strand(net::make_strand(ioc)),
      acceptor(ioc),
      handler(std::move(h)),
      options(std::move(o)) {}

  /// Runs on accept_strand once the threads run: the acceptor is not thread-safe, and its
  /// accept handler and stop()'s close would otherwise race on two io threads.
  void accept() {
    acceptor.async_accept(
      net::make_strand(ioc),
      net::bind_executor(accept_strand, [this](beast::error_code ec, tcp::socket s) {
        if (!acceptor.is_open())
          return;
        if (!ec)
          std::make_shared<connection>(std::move(s), handler, options, weak_from_this())->run();
        accept();
      }));
  }

  net::io_context ioc;
  net::strand<net::io_context::executor_type> accept_strand;
  tcp::acceptor acceptor;
  http_handler handler;
  http_server_options options;
  std::vector<std::thread> threads;
};

http_server::http_server(std::shared_ptr<impl> p) : impl_(std::move(p)) {
}

http_server::~http_server() {
  stop();
}

caf::expected<std::unique_ptr<http_server>> http_server::start(const http_server_options& o,
                                                               http_handler handler) {
  auto p = std::make_shared<impl>(std::max<size_t>(1, o.threads), std::move(handler), o);
  beast::error_code ec;
  auto address =
    net::ip::make_address(o.listen.host == "localhost" ? "127.0.0.1" : o.listen.host, ec);
  if (ec)
    return make_error(errc::invalid_argument,
                      "listen address '" + o.listen.host + "': " + ec.message());
  tcp::endpoint endpoint{address, o.listen.port};
  auto& a = p->acceptor;
  if (a.open(endpoint.protocol(), ec); !ec)
    if (a.set_option(net::socket_base::reuse_address(true), ec); !ec)
      if (a.bind(endpoint, ec); !ec)
        a.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    return make_error(errc::io_error,
                      "cannot listen on " + runtime::to_string(o.listen) + ": " + ec.message());
  p->accept();
  for (size_t i = 0; i < std::max<size_t>(1, o.threads); ++i)
    p->threads.emplace_back([raw = p.get()] { raw->ioc.run(); });
  return std::unique_ptr<http_server>{new http_server(std::move(p))};
}

uint16_t http_server::port() const {
  beast::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

void http_server::stop() {
  if (!impl_ || impl_->threads.empty())
    return;
  net::post(impl_->accept_strand, [p = impl_.get()] {
    beast::error_code e;
    p->acceptor.close(e);
  });
  impl_->ioc.stop();
  // The accept handler then never runs again; the acceptor closes with the impl.
  for (auto& t : impl_->threads)
    t.join();
  impl_->threads.clear();
}

} // namespace darcy::runtime
