//===- GlooCommTest.cpp - the Gloo communicator's transport thread --------===//
//
// A Gloo communicator's TCP device starts one event thread. It runs under
// SCHED_BATCH (it must not preempt the thread that posted a message; see
// createDevice in Comm.cpp), the thread that connected keeps its own
// policy, and LOOM_TRANSPORT_THREAD=normal or a bad value behave as
// documented. Connecting makes the process ignore SIGPIPE (a write to a
// peer that died must fail the collective, not kill the rank) unless the
// program handles it itself.
//
//===----------------------------------------------------------------------===//

#include "Comm.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using loom::comm::Rendezvous;

Rendezvous oneRank(const std::string &name) {
  Rendezvous r;
  r.rank = 0;
  r.worldSize = 1;
  r.store = "file";
  r.path = ::testing::TempDir() + "/" + name;
  r.prefix =
      name + std::to_string(
                 std::chrono::steady_clock::now().time_since_epoch().count());
  r.timeout = std::chrono::seconds(5);
  return r;
}

/// The scheduling policy of each thread of this process.
std::vector<int> threadPolicies() {
  std::vector<int> policies;
  DIR *dir = opendir("/proc/self/task");
  if (!dir)
    return policies;
  while (dirent *entry = readdir(dir)) {
    int tid = std::atoi(entry->d_name);
    if (tid > 0)
      policies.push_back(sched_getscheduler(tid));
  }
  closedir(dir);
  return policies;
}

int countOf(const std::vector<int> &policies, int policy) {
  int n = 0;
  for (int p : policies)
    n += p == policy;
  return n;
}

int callerPolicy() {
  int policy = -1;
  sched_param param{};
  pthread_getschedparam(pthread_self(), &policy, &param);
  return policy;
}

TEST(GlooComm, TransportThreadRunsUnderBatchPolicy) {
  ::unsetenv("LOOM_TRANSPORT_THREAD");
  int before = countOf(threadPolicies(), SCHED_BATCH);
  auto comm = loom::comm::connectGloo(oneRank("gloo-batch"));
  ASSERT_TRUE(comm);
  EXPECT_EQ(countOf(threadPolicies(), SCHED_BATCH), before + 1);
  EXPECT_EQ(callerPolicy(), SCHED_OTHER);
  // The communicator still works: a one-rank all-reduce keeps the values.
  std::vector<float> values = {1.5f, -2.0f};
  comm->allReduceSum(values.data(), values.size());
  EXPECT_EQ(values, (std::vector<float>{1.5f, -2.0f}));
}

TEST(GlooComm, NormalPolicyOnRequest) {
  ::setenv("LOOM_TRANSPORT_THREAD", "normal", 1);
  int before = countOf(threadPolicies(), SCHED_BATCH);
  auto comm = loom::comm::connectGloo(oneRank("gloo-normal"));
  ::unsetenv("LOOM_TRANSPORT_THREAD");
  ASSERT_TRUE(comm);
  EXPECT_EQ(countOf(threadPolicies(), SCHED_BATCH), before);
  EXPECT_EQ(callerPolicy(), SCHED_OTHER);
}

TEST(GlooComm, BadPolicyIsNamed) {
  ::setenv("LOOM_TRANSPORT_THREAD", "fast", 1);
  try {
    loom::comm::connectGloo(oneRank("gloo-bad"));
    ADD_FAILURE() << "expected an error";
  } catch (const loom::comm::Error &e) {
    EXPECT_NE(std::string(e.what()).find("LOOM_TRANSPORT_THREAD=fast"),
              std::string::npos)
        << e.what();
  }
  ::unsetenv("LOOM_TRANSPORT_THREAD");
}

/// SIGPIPE's handler now.
sighandler_t pipeHandler() {
  struct sigaction current {};
  sigaction(SIGPIPE, nullptr, &current);
  return current.sa_handler;
}

TEST(GlooComm, BrokenPipesAreIgnored) {
  ::signal(SIGPIPE, SIG_DFL);
  auto comm = loom::comm::connectGloo(oneRank("gloo-pipe"));
  ASSERT_TRUE(comm);
  EXPECT_EQ(pipeHandler(), SIG_IGN);
}

/// A program's own SIGPIPE handler (it does nothing).
void ownPipeHandler(int) {}

TEST(GlooComm, TheProgramsOwnPipeHandlerStays) {
  ::signal(SIGPIPE, ownPipeHandler);
  auto comm = loom::comm::connectGloo(oneRank("gloo-pipe-handler"));
  ASSERT_TRUE(comm);
  EXPECT_EQ(pipeHandler(), &ownPipeHandler);
  ::signal(SIGPIPE, SIG_DFL);
}

} // namespace
