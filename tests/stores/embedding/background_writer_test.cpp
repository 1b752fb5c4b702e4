#include "stores/embedding/background_writer.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::stores {
namespace {

TEST(background_writer, JobsRunOneAtATimeInTheOrderGivenAndReturnTheirErrors) {
  std::vector<int> ran; // written by the writer only, read once every job is done
  std::vector<std::future<caf::error>> done;
  for (int i = 0; i < 100; ++i)
    done.push_back(write_in_background([&ran, i]() -> caf::error {
      ran.push_back(i);
      if (i % 10 == 3)
        return make_error(errc::io_error, "job " + std::to_string(i));
      return {};
    }));
  for (int i = 0; i < 100; ++i) {
    auto err = done[i].get();
    EXPECT_EQ(is(err, errc::io_error), i % 10 == 3) << "job " << i;
  }
  std::vector<int> expected(100);
  for (int i = 0; i < 100; ++i)
    expected[i] = i;
  EXPECT_EQ(ran, expected);
}

TEST(background_writer, AForkedChildGetsAWriterOfItsOwn) {
  ASSERT_FALSE(write_in_background([] { return caf::error{}; }).get()) << "the parent's runs";
  auto pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Without a writer of its own, the child would wait here forever (CTest's limit ends it).
    bool ran = false;
    auto err = write_in_background([&ran] {
                 ran = true;
                 return caf::error{};
               }).get();
    ::_exit(!err && ran ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

} // namespace
} // namespace darcy::stores
