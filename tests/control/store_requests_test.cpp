// control/federation/store_requests.hpp: a store request runs on the API's worker and is
// answered on the io thread with its request id; one the worker could not start within the
// budget is refused UNAVAILABLE, naming the store, without running; an answer after the API
// is gone is dropped.
#include "control/federation/store_requests.hpp"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>

#include <atomic>
#include <thread>
#include <vector>

namespace vxfed::control {
namespace {

using namespace std::chrono_literals;

// Runs the io thread's loop until `done()` or `limit` (the worker posts to it later).
template <typename Done>
void run_io(boost::asio::io_context& io, Done done, std::chrono::milliseconds limit) {
  auto guard = boost::asio::make_work_guard(io);
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < end) io.run_for(10ms);
}

v1::ControlResponse ok_response() {
  v1::ControlResponse r;
  r.set_code(v1::OK);
  return r;
}

TEST(StoreRequests, AnsweredOnTheIoThreadWithTheRequestId) {
  boost::asio::io_context io;
  StoreWorker worker;
  auto alive = std::make_shared<bool>(true);
  std::vector<v1::ControlResponse> answers;
  std::thread::id ran_on;
  run_store_request(worker, io, alive, 42, 2000ms, "policy", "etcd-a", [&](v1::ControlResponse r) { answers.push_back(r); },
                    [&] {
                      ran_on = std::this_thread::get_id();
                      return ok_response();
                    });
  run_io(io, [&] { return answers.size() == 1; }, 2000ms);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].request_id(), 42u);
  EXPECT_EQ(answers[0].code(), v1::OK);
  EXPECT_NE(ran_on, std::this_thread::get_id()) << "the store call runs on the worker";
}

TEST(StoreRequests, ARequestThatCouldNotStartInItsBudgetIsRefusedAndNotRun) {
  boost::asio::io_context io;
  StoreWorker worker;
  auto alive = std::make_shared<bool>(true);
  std::vector<v1::ControlResponse> answers;
  std::atomic<int> runs{0};
  auto slow = [&] {
    ++runs;
    std::this_thread::sleep_for(300ms);
    return ok_response();
  };
  auto reply = [&](v1::ControlResponse r) { answers.push_back(r); };
  run_store_request(worker, io, alive, 1, 100ms, "service", "etcd-a", reply, slow);
  run_store_request(worker, io, alive, 2, 100ms, "service", "etcd-a", reply, slow);  // waits 300 ms behind it
  run_io(io, [&] { return answers.size() == 2; }, 2000ms);
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(runs.load(), 1) << "the second never started";
  EXPECT_EQ(answers[1].request_id(), 2u);
  EXPECT_EQ(answers[1].code(), v1::UNAVAILABLE);
  EXPECT_EQ(answers[1].error(), "federation store etcd-a: an earlier service request held it for 100 ms; nothing was done, try again");
}

TEST(StoreRequests, AnAnswerAfterTheApiIsGoneIsDropped) {
  boost::asio::io_context io;
  StoreWorker worker;
  auto alive = std::make_shared<bool>(true);
  int answers = 0;
  run_store_request(worker, io, alive, 7, 2000ms, "policy", "etcd-a", [&](v1::ControlResponse) { ++answers; }, [&] {
    *alive = false;  // the API goes away while its call runs (the flag is the io thread's in vxfedd)
    return ok_response();
  });
  run_io(io, [] { return false; }, 300ms);
  EXPECT_EQ(answers, 0);
}

}  // namespace
}  // namespace vxfed::control
