// An API's store requests (vxfedctl policy ..., vxfedctl service ...): the store call runs on
// the API's own StoreWorker within a budget, and its answer goes back to the io thread. Shared
// by PolicyApi and ServiceApi, whose requests differ only in what they ask the store.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>

#include "control/federation/store_worker.hpp"
#include "proto/control.pb.h"

namespace vxfed::control {

// Runs `call` on `worker` under a CallDeadline of `budget` from now, then posts its response,
// with `request_id` set, to `io`, where `reply` gets it unless `*alive` is false by then (the
// API is gone). A request the worker could not start within the budget (an earlier one held
// the store) is answered UNAVAILABLE, naming `store` and `what` ("policy", "service"), and
// nothing is done.
void run_store_request(StoreWorker& worker, boost::asio::io_context& io, std::shared_ptr<bool> alive,
                       std::uint64_t request_id, std::chrono::milliseconds budget, std::string what, std::string store,
                       std::function<void(v1::ControlResponse)> reply, std::function<v1::ControlResponse()> call);

}  // namespace vxfed::control
