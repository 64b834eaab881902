// One thread of its own for the calls vxfedd makes to the federation store in the background
// (registration, keep-alive, reconcile, collector scans). A store call can wait seconds (an
// election, a member cut off from the quorum); on the io thread that wait would hold every API
// request, the dataplane link and BGP. Work runs in the order posted; results go back to the
// io thread by the caller's own asio::post.
#pragma once

#include <functional>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

namespace vxfed::control {

class StoreWorker {
 public:
  StoreWorker();
  ~StoreWorker();  // stop()
  StoreWorker(const StoreWorker&) = delete;
  StoreWorker& operator=(const StoreWorker&) = delete;

  void post(std::function<void()> work);
  // Lets the work in progress finish, drops what has not started, and joins the thread.
  void stop();

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::thread thread_;
};

}  // namespace vxfed::control
