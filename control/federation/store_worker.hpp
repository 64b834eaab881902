// One thread of its own for the calls vxfedd makes to the federation store in the background
// (registration, keep-alive, reconcile, collector scans). A store call can wait seconds (an
// election, a member cut off from the quorum); on the io thread that wait would hold every API
// request, the dataplane link and BGP. Work runs in the order posted; results go back to the
// io thread by the caller's own asio::post.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
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

// One user of the federation store at a time, API requests first: a background user
// (registration, keep-alive, reconcile) waits while an API request (a new network, a block
// claim) waits, so the request is next once the store call in progress is done, instead of
// waiting behind every background call queued meanwhile. Lockable both ways
// (std::lock_guard<StoreGate::Api>, std::unique_lock<StoreGate::Background>).
class StoreGate {
 public:
  class Api {
   public:
    explicit Api(StoreGate& gate) : gate_(gate) {}
    void lock() { try_lock_until(std::chrono::steady_clock::time_point::max()); }
    bool try_lock_until(std::chrono::steady_clock::time_point end);
    bool try_lock();
    void unlock() { gate_.unlock(); }

   private:
    StoreGate& gate_;
  };
  class Background {
   public:
    explicit Background(StoreGate& gate) : gate_(gate) {}
    void lock();
    void unlock() { gate_.unlock(); }

   private:
    StoreGate& gate_;
  };
  Api& api() { return api_; }
  Background& background() { return background_; }

 private:
  void unlock();
  std::mutex mutex_;
  std::condition_variable free_;
  bool held_ = false;
  unsigned api_waiting_ = 0;
  Api api_{*this};
  Background background_{*this};
};

}  // namespace vxfed::control
