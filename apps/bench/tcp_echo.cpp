#include "apps/bench/tcp_echo.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio.hpp>

#include "messages/error.hpp"

namespace darcy::apps {

namespace {

using boost::asio::ip::tcp;
using clock = std::chrono::steady_clock;

void serve(tcp::socket socket, uint32_t count) {
  std::vector<char> buffer;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t size = 0;
    boost::asio::read(socket, boost::asio::buffer(&size, sizeof(size)));
    buffer.resize(size);
    boost::asio::read(socket, boost::asio::buffer(buffer));
    std::array<boost::asio::const_buffer, 2> frame{boost::asio::buffer(&size, sizeof(size)),
                                                   boost::asio::buffer(buffer)};
    boost::asio::write(socket, frame);
  }
}

} // namespace

caf::expected<probe_result> run_tcp_echo(const probe_spec& spec) {
  if (spec.count == 0 || spec.window == 0)
    return make_error(errc::invalid_argument, "a probe needs a count and a window");
  try {
    boost::asio::io_context io;
    tcp::acceptor acceptor{io, tcp::endpoint{boost::asio::ip::address_v4::loopback(), 0}};
    tcp::socket server_socket{io};
    std::thread server;
    tcp::socket client{io};
    client.connect(acceptor.local_endpoint());
    acceptor.accept(server_socket);
    server_socket.set_option(tcp::no_delay(true));
    client.set_option(tcp::no_delay(true));
    server = std::thread{serve, std::move(server_socket), spec.count};

    std::string payload(spec.payload_bytes, 'x');
    std::vector<clock::time_point> sent(spec.count);
    std::mutex mutex;
    std::condition_variable cv;
    uint32_t in_flight = 0;
    auto begin = clock::now();
    std::thread writer{[&] {
      uint32_t size = spec.payload_bytes;
      for (uint32_t i = 0; i < spec.count; ++i) {
        {
          std::unique_lock lock{mutex};
          cv.wait(lock, [&] { return in_flight < spec.window; });
          ++in_flight;
          sent[i] = clock::now();
        }
        std::array<boost::asio::const_buffer, 2> frame{boost::asio::buffer(&size, sizeof(size)),
                                                       boost::asio::buffer(payload)};
        boost::asio::write(client, frame);
      }
    }};
    probe_result result;
    result.payload_bytes = spec.payload_bytes;
    result.window = spec.window;
    result.latencies_ns.reserve(spec.count);
    std::vector<char> reply(spec.payload_bytes);
    for (uint32_t i = 0; i < spec.count; ++i) {
      uint32_t size = 0;
      boost::asio::read(client, boost::asio::buffer(&size, sizeof(size)));
      boost::asio::read(client, boost::asio::buffer(reply.data(), size));
      auto now = clock::now();
      std::lock_guard lock{mutex};
      result.latencies_ns.push_back(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - sent[i]).count());
      --in_flight;
      cv.notify_one();
    }
    result.seconds = std::chrono::duration<double>(clock::now() - begin).count();
    result.count = spec.count;
    writer.join();
    server.join();
    return result;
  } catch (const boost::system::system_error& e) {
    return make_error(errc::io_error, std::string{"tcp echo: "} + e.what());
  }
}

} // namespace darcy::apps
