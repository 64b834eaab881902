#include "control/store_worker.hpp"

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

}  // namespace vxfed::control
