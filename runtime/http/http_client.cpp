#include "runtime/http/http_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace darcy::runtime {

std::string http_exchange(uint16_t port, const std::string& raw) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return {};
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return {};
  }
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
                              const std::string& token, const std::string& body) {
  std::string r = method + " " + target + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n";
  if (!token.empty())
    r += "Authorization: Bearer " + token + "\r\n";
  if (!body.empty() || method == "POST")
    r +=
      "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  return r + "\r\n" + body;
}

} // namespace darcy::runtime
