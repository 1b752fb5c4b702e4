#include "runtime/process/machine.hpp"

#include <unistd.h>

#include <cstring>
#include <memory>

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::runtime {
namespace {

TEST(machine, ResidentBytesGrowWithMemoryTouchedAndThePeakHoldsThem) {
  auto before = resident_bytes();
  ASSERT_GT(before, 0u);
  constexpr size_t bytes = 64 << 20;
  auto block = std::make_unique<char[]>(bytes);
  std::memset(block.get(), 1, bytes);
  auto touched = resident_bytes();
  EXPECT_GE(touched, before + bytes * 3 / 4) << int(block[bytes - 1]);
  // The kernel folds each thread's RSS count into the peak in batches of pages.
  constexpr size_t slack = 4 << 20;
  EXPECT_GE(peak_resident_bytes() + slack, touched);
  block.reset();
  EXPECT_GE(peak_resident_bytes() + slack, touched) << "a peak stays after the memory goes";
}

TEST(machine, ThePeakOfAProcessByPidIsItsOwnAndZeroForNoProcess) {
  auto own = peak_resident_bytes();
  auto by_pid = peak_resident_bytes(::getpid());
  ASSERT_GT(by_pid, 0u);
  // Both read the same /proc figure; it only grows between the two reads.
  EXPECT_GE(by_pid, own);
  EXPECT_EQ(peak_resident_bytes(pid_t{-1}), 0u);
}

TEST(machine, CpuSecondsGrowWithWorkOnThisThreadAndTheMachinesTicksAdvance) {
  auto thread_before = thread_cpu_seconds();
  auto process_before = process_cpu_seconds();
  auto machine_before = machine_cpu_times();
  ASSERT_GT(machine_before.busy + machine_before.idle, 0.0) << "/proc/stat read";
  // Spin until this thread has used a tenth of a second of CPU, whatever else runs.
  volatile uint64_t sink = 0;
  while (thread_cpu_seconds() < thread_before + 0.1)
    for (int i = 0; i < 100000; ++i)
      sink = sink + i;
  EXPECT_GE(process_cpu_seconds(), process_before + 0.1) << "the process counts its threads";
  auto machine_after = machine_cpu_times();
  EXPECT_GT(machine_after.busy, machine_before.busy);
  EXPECT_GE(machine_after.steal, machine_before.steal);
  EXPECT_GE(machine_after.idle, machine_before.idle);
}

TEST(machine, CheckAtMostNamesTheFlagAndTheLimit) {
  struct {
    uint64_t value;
    bool fails;
  } cases[] = {{0, false}, {8, false}, {9, true}};
  for (auto& c : cases) {
    auto err = check_at_most("--threads", c.value, 8, "8 per core");
    EXPECT_EQ(bool(err), c.fails) << c.value;
    if (err) {
      EXPECT_TRUE(is(err, errc::invalid_argument));
      EXPECT_NE(render(err).find("--threads 9"), std::string::npos) << render(err);
      EXPECT_NE(render(err).find("8 per core"), std::string::npos) << render(err);
    }
  }
  EXPECT_GE(machine_cores(), 1u);
  EXPECT_GT(machine_memory_bytes(), 0u);
  EXPECT_EQ(max_threads(), 8u * machine_cores());
}

} // namespace
} // namespace darcy::runtime
