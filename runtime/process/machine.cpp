#include "runtime/process/machine.hpp"

#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <fstream>
#include <thread>

#include "messages/error.hpp"

namespace darcy::runtime {

unsigned machine_cores() {
  return std::max(1u, std::thread::hardware_concurrency());
}

uint64_t machine_memory_bytes() {
  auto pages = ::sysconf(_SC_PHYS_PAGES);
  auto size = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(size)
                               : uint64_t{1} << 30;
}

uint64_t max_threads() {
  return uint64_t{8} * machine_cores();
}

caf::error check_at_most(const std::string& flag, uint64_t value, uint64_t limit,
                         const std::string& why) {
  if (value <= limit)
    return {};
  return make_error(errc::invalid_argument, flag + " " + std::to_string(value) +
                                              " is over the limit of " + std::to_string(limit) +
                                              " (" + why + ")");
}

} // namespace darcy::runtime

namespace darcy::runtime {

namespace {

/// The kB figure of /proc/`process`/status's line `field` ("VmRSS:"), in bytes.
uint64_t status_bytes(const std::string& process, const std::string& field) {
  std::ifstream status{"/proc/" + process + "/status"};
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(field, 0) == 0)
      return std::strtoull(line.c_str() + field.size(), nullptr, 10) * 1024;
  return 0;
}

} // namespace

uint64_t resident_bytes() {
  return status_bytes("self", "VmRSS:");
}

uint64_t peak_resident_bytes() {
  return status_bytes("self", "VmHWM:");
}

uint64_t peak_resident_bytes(pid_t pid) {
  return status_bytes(std::to_string(pid), "VmHWM:");
}

namespace {

double clock_seconds(clockid_t clock) {
  timespec t{};
  if (::clock_gettime(clock, &t) != 0)
    return 0;
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

} // namespace

double process_cpu_seconds() {
  return clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
}

double thread_cpu_seconds() {
  return clock_seconds(CLOCK_THREAD_CPUTIME_ID);
}

machine_cpu_seconds machine_cpu_times() {
  std::ifstream stat{"/proc/stat"};
  std::string cpu;
  // user nice system idle iowait irq softirq steal, in clock ticks.
  uint64_t f[8] = {};
  if (!(stat >> cpu) || cpu != "cpu")
    return {};
  for (auto& v : f)
    if (!(stat >> v))
      return {};
  auto tick = double(std::max(1L, ::sysconf(_SC_CLK_TCK)));
  return {.busy = double(f[0] + f[1] + f[2] + f[5] + f[6]) / tick,
          .idle = double(f[3] + f[4]) / tick,
          .steal = double(f[7]) / tick};
}

} // namespace darcy::runtime
