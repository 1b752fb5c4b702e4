#include "runtime/http/http_client.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string_view>

#include "messages/error.hpp"

namespace darcy::runtime {

std::string http_exchange(uint16_t port, const std::string& raw) {
  return http_exchange(host_port{"127.0.0.1", port}, raw);
}

std::string http_exchange(const host_port& to, const std::string& raw) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(to.host.c_str(), std::to_string(to.port).c_str(), &hints, &found) != 0)
    return {};
  int fd = -1;
  for (auto* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0)
      continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0)
    return {};
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  size_t sent = 0;
  while (sent < raw.size()) {
    auto n = ::send(fd, raw.data() + sent, raw.size() - sent, MSG_NOSIGNAL);
    if (n <= 0)
      break;
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
    answer.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return answer;
}

unsigned http_status(const std::string& answer) {
  if (answer.rfind("HTTP/1.1 ", 0) != 0 || answer.size() < 12)
    return 0;
  return static_cast<unsigned>(std::stoul(answer.substr(9, 3)));
}

std::string http_body(const std::string& answer) {
  auto at = answer.find("\r\n\r\n");
  return at == std::string::npos ? std::string{} : answer.substr(at + 4);
}

std::string http_request_text(const std::string& method, const std::string& target,
                              const std::string& token, const std::string& body,
                              const std::string& content_type) {
  std::string r = method + " " + target + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n";
  if (!token.empty())
    r += "Authorization: Bearer " + token + "\r\n";
  if (!body.empty() || method == "POST")
    r += "Content-Type: " + content_type + "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n";
  return r + "\r\n" + body;
}

caf::expected<http_url> parse_http_url(const std::string& url) {
  constexpr std::string_view scheme = "http://";
  auto bad = [&] {
    return make_error(errc::invalid_argument, "'" + url + "' is not http://HOST:PORT/PATH");
  };
  if (url.compare(0, scheme.size(), scheme) != 0)
    return bad();
  auto rest = url.substr(scheme.size());
  auto slash = rest.find('/');
  if (slash == std::string::npos)
    return bad();
  auto address = parse_host_port(rest.substr(0, slash));
  if (!address)
    return bad();
  return http_url{*address, rest.substr(slash)};
}

} // namespace darcy::runtime
