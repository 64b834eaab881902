#include "control/federation/store_worker.hpp"

#include <boost/asio/post.hpp>

namespace vxfed::control {

StoreWorker::StoreWorker() : guard_(boost::asio::make_work_guard(io_)), thread_([this] { io_.run(); }) {}

StoreWorker::~StoreWorker() { stop(); }

void StoreWorker::post(std::function<void()> work) { boost::asio::post(io_, std::move(work)); }

void StoreWorker::stop() {
  guard_.reset();
  io_.stop();
  if (thread_.joinable()) thread_.join();
}

bool StoreGate::Api::try_lock_until(std::chrono::steady_clock::time_point end) {
  std::unique_lock lock(gate_.mutex_);
  ++gate_.api_waiting_;
  const bool got = gate_.free_.wait_until(lock, end, [this] { return !gate_.held_; });
  --gate_.api_waiting_;
  if (got) gate_.held_ = true;
  else if (gate_.api_waiting_ == 0) gate_.free_.notify_all();  // the background may go on
  return got;
}

bool StoreGate::Api::try_lock() {
  std::lock_guard lock(gate_.mutex_);
  if (gate_.held_) return false;
  gate_.held_ = true;
  return true;
}

void StoreGate::Background::lock() {
  std::unique_lock lock(gate_.mutex_);
  gate_.free_.wait(lock, [this] { return !gate_.held_ && gate_.api_waiting_ == 0; });
  gate_.held_ = true;
}

void StoreGate::unlock() {
  {
    std::lock_guard lock(mutex_);
    held_ = false;
  }
  free_.notify_all();
}

}  // namespace vxfed::control
