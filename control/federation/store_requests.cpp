#include "control/federation/store_requests.hpp"

#include <boost/asio/post.hpp>

#include "control/federation/store_access.hpp"
#include "federation/etcd_client.hpp"

namespace vxfed::control {

void run_store_request(StoreWorker& worker, boost::asio::io_context& io, std::shared_ptr<bool> alive,
                       std::uint64_t request_id, std::chrono::milliseconds budget, std::string what, std::string store,
                       std::function<void(v1::ControlResponse)> reply, std::function<v1::ControlResponse()> call) {
  const auto end = std::chrono::steady_clock::now() + budget;
  worker.post([&io, request_id, end, budget, what = std::move(what), store = std::move(store), alive = std::move(alive),
               reply = std::move(reply), call = std::move(call)]() mutable {
    v1::ControlResponse response;
    if (std::chrono::steady_clock::now() >= end) {
      // Never started: nothing was written.
      response = refused(v1::UNAVAILABLE, "federation store " + store + ": an earlier " + what + " request held it for " +
                                              std::to_string(budget.count()) + " ms; nothing was done, try again");
    } else {
      federation::CallDeadline deadline(end);
      response = call();
    }
    response.set_request_id(request_id);
    boost::asio::post(io, [alive = std::move(alive), reply = std::move(reply), response = std::move(response)]() mutable {
      if (*alive) reply(std::move(response));
    });
  });
}

}  // namespace vxfed::control
