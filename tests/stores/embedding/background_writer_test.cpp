#include "stores/embedding/background_writer.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::stores {
namespace {

TEST(background_writer, JobsRunOneAtATimeInTheOrderGivenAndReturnTheirErrors) {
  std::vector<int> ran; // written by the writer only, read once every job is done
  std::vector<background_job> done;
  for (int i = 0; i < 100; ++i)
    done.push_back(write_in_background([&ran, i]() -> caf::error {
      ran.push_back(i);
      if (i % 10 == 3)
        return make_error(errc::io_error, "job " + std::to_string(i));
      return {};
    }));
  for (int i = 0; i < 100; ++i) {
    auto err = done[i].wait();
    EXPECT_EQ(is(err, errc::io_error), i % 10 == 3) << "job " << i;
  }
  std::vector<int> expected(100);
  for (int i = 0; i < 100; ++i)
    expected[i] = i;
  EXPECT_EQ(ran, expected);
}

TEST(background_writer, AJobTheWriterHasNotBegunIsRunByItsWaiterAndPassedOverByTheWriter) {
  // The writer is held in a first job until the second has been taken by its waiter.
  std::promise<void> release;
  auto released = release.get_future().share();
  std::atomic<bool> first_started = false;
  auto first = write_in_background([&] {
    first_started = true;
    released.wait();
    return caf::error{};
  });
  std::atomic<int> second_runs = 0;
  std::thread::id second_thread;
  auto second = write_in_background([&]() -> caf::error {
    ++second_runs;
    second_thread = std::this_thread::get_id();
    return make_error(errc::io_error, "the second job's own error");
  });
  auto err = second.take_or_wait();
  EXPECT_TRUE(is(err, errc::io_error)) << "the job's outcome is the waiter's";
  EXPECT_EQ(second_thread, std::this_thread::get_id());
  EXPECT_FALSE(second.valid());
  release.set_value();
  EXPECT_FALSE(first.take_or_wait());
  EXPECT_TRUE(first_started);
  // A job behind both: once it is done, the writer has passed the second one over.
  EXPECT_FALSE(write_in_background([] { return caf::error{}; }).wait());
  EXPECT_EQ(second_runs, 1);
}

TEST(background_writer, ADoneJobAnswersItsOutcomeAndADefaultOneNone) {
  EXPECT_TRUE(
    is(background_job::done(make_error(errc::io_error, "x")).take_or_wait(), errc::io_error));
  EXPECT_FALSE(background_job::done({}).wait());
  background_job none;
  EXPECT_FALSE(none.valid());
  EXPECT_FALSE(none.take_or_wait());
}

TEST(background_writer, AForkedChildGetsAWriterOfItsOwn) {
  ASSERT_FALSE(write_in_background([] { return caf::error{}; }).wait()) << "the parent's runs";
  auto pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Without a writer of its own, the child would wait here forever (CTest's limit ends it).
    bool ran = false;
    auto err = write_in_background([&ran] {
                 ran = true;
                 return caf::error{};
               }).wait();
    ::_exit(!err && ran ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

} // namespace
} // namespace darcy::stores
