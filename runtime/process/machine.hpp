// What this machine offers a process, for bounding what a command asks for: a request for more
// threads or memory than the machine can give fails with a message that names the limit,
// instead of aborting in the middle of a run.
//
//   if (auto err = runtime::check_at_most("--threads", n, runtime::max_threads(), "8 per core"))
//     return err;
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include <caf/error.hpp>

namespace darcy::runtime {

/// Cores this process may use (at least 1).
unsigned machine_cores();

/// Physical memory in bytes.
uint64_t machine_memory_bytes();

/// What this process holds resident now (VmRSS), and the most it has so far (VmHWM), in bytes;
/// 0 where /proc does not say.
uint64_t resident_bytes();
uint64_t peak_resident_bytes();
/// The most process `pid` has held resident so far (VmHWM), in bytes; 0 where /proc does not
/// say (a process gone, or another user's).
uint64_t peak_resident_bytes(pid_t pid);

/// CPU seconds (user and system) used so far by this process, all its threads, and by the
/// calling thread alone.
double process_cpu_seconds();
double thread_cpu_seconds();

/// Seconds summed over the machine's cores since boot (/proc/stat's first line): busy (user,
/// nice, system, interrupts), idle (with I/O wait), and stolen by a hypervisor for other
/// guests. All zero where /proc does not say.
struct machine_cpu_seconds {
  double busy = 0;
  double idle = 0;
  double steal = 0;
};
machine_cpu_seconds machine_cpu_times();

/// The most threads or in-process workers a command may start: 8 per core.
uint64_t max_threads();

/// errc::invalid_argument "FLAG N is over the limit of LIMIT (WHY)" when value > limit.
caf::error check_at_most(const std::string& flag, uint64_t value, uint64_t limit,
                         const std::string& why);

} // namespace darcy::runtime
