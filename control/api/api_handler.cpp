#include "control/api/api_handler.hpp"

#include <algorithm>
#include <chrono>

namespace vxfed::control {

const char* error_code_name(v1::ErrorCode code) {
  switch (code) {
    case v1::OK: return "ok";
    case v1::INVALID_ARGUMENT: return "invalid_argument";
    case v1::NOT_FOUND: return "not_found";
    case v1::ALREADY_EXISTS: return "already_exists";
    case v1::EXHAUSTED: return "exhausted";
    case v1::UNAVAILABLE: return "unavailable";
    case v1::PERMISSION_DENIED: return "permission_denied";
    case v1::INTERNAL: return "internal";
    case v1::DATAPLANE_REFUSED: return "dataplane_refused";
    default: return "unknown";
  }
}

namespace {

template <typename T>
bool fill(v1::ControlResponse& response, Result<T>& result, v1::ErrorCode code) {
  if (result.ok()) return true;
  response.set_code(code == v1::OK ? v1::INTERNAL : code);
  response.set_error(result.error());
  return false;
}

}  // namespace

// The operation's name as control.proto spells its field: a fixed set, so a bounded label.
static std::string op_name(const v1::ControlRequest& request) {
  if (request.op_case() == v1::ControlRequest::OP_NOT_SET) return "unknown";
  const auto* field = v1::ControlRequest::descriptor()->FindFieldByNumber(request.op_case());
  return field ? field->name() : "unknown";
}

ApiHandler::ApiHandler(NodeState& state, DaemonView view) : state_(state), view_(std::move(view)) {
  const auto* oneof = v1::ControlRequest::descriptor()->FindOneofByName("op");
  for (int i = 0; oneof && i < oneof->field_count(); ++i) counters_.by_op[oneof->field(i)->name()];
  counters_.by_op["unknown"];
}

v1::ControlResponse ApiHandler::handle(const v1::ControlRequest& request) {
  const auto started = std::chrono::steady_clock::now();
  auto response = answer(request);
  finish(response, op_name(request), started);
  return response;
}

void ApiHandler::handle(const v1::ControlRequest& request, Reply reply) {
  const auto started = std::chrono::steady_clock::now();
  if (request.op_case() == v1::ControlRequest::kAddNetwork) {
    // A new network may need the federation store: asked off this thread first, so that a
    // slow store holds this request only, never the others.
    state_.prepare_network(network_config_from_spec(request.add_network().spec()),
                           [this, request, reply = std::move(reply), started](v1::ErrorCode code, const std::string& error) {
                             v1::ControlResponse response;
                             if (code == v1::OK) {
                               response = answer(request);
                             } else {
                               ++counters_.requests;
                               response.set_request_id(request.request_id());
                               response.set_code(code);
                               response.set_error(error);
                             }
                             finish(response, op_name(request), started);
                             reply(std::move(response));
                           });
    return;
  }
  if (request.op_case() == v1::ControlRequest::kClaimBlock) {
    // The federation store's claim runs off this thread; the answer is the network with it.
    const auto& claim = request.claim_block();
    state_.claim_block(claim.network(), {claim.seen().begin(), claim.seen().end()},
                       [this, request, reply = std::move(reply), started](v1::ErrorCode code, const std::string& error) {
                         v1::ControlResponse response;
                         response.set_request_id(request.request_id());
                         ++counters_.requests;
                         if (code == v1::OK) {
                           v1::ErrorCode got = v1::OK;
                           auto r = state_.get_network(request.claim_block().network(), &got);
                           if (r) *response.mutable_network() = std::move(*r);
                           response.set_code(got);
                           if (!r) response.set_error(r.error());
                         } else {
                           response.set_code(code);
                           response.set_error(error);
                         }
                         finish(response, op_name(request), started);
                         reply(std::move(response));
                       });
    return;
  }
  // Network policy is control/policy/'s (it returns false for any other request).
  if (view_.policy && view_.policy(request, [this, op = op_name(request), reply, started](v1::ControlResponse response) {
        ++counters_.requests;
        finish(response, op, started);
        reply(std::move(response));
      }))
    return;
  // Global services are control/services/'s (the same way).
  if (view_.services && view_.services(request, [this, op = op_name(request), reply, started](v1::ControlResponse response) {
        ++counters_.requests;
        finish(response, op, started);
        reply(std::move(response));
      }))
    return;
  auto response = answer(request);
  const std::uint32_t wait_ms =
      request.op_case() == v1::ControlRequest::kAttachEndpoint ? request.attach_endpoint().wait_ms() : 0;
  if (wait_ms == 0 || response.code() != v1::OK) {
    finish(response, op_name(request), started);
    reply(std::move(response));
    return;
  }
  ++counters_.attach_waits;
  const auto& spec = request.attach_endpoint().endpoint();
  Waiting w{request.request_id(), spec.container_id(), spec.ifname(),
            std::chrono::steady_clock::now() + std::chrono::milliseconds(std::min(wait_ms, kMaxAttachWaitMs)),
            std::min(wait_ms, kMaxAttachWaitMs), std::move(reply), op_name(request), started};
  if (auto done = settle(w, false)) {
    finish(*done, w.op, w.started);
    w.reply(std::move(*done));
    return;
  }
  waiting_.push_back(std::move(w));
}

void ApiHandler::progress() {
  if (waiting_.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  // Replies may re-enter (a reply that writes); settle first, then answer.
  std::vector<std::pair<Reply, v1::ControlResponse>> answers;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (auto done = settle(*it, now >= it->deadline)) {
      finish(*done, it->op, it->started);
      answers.emplace_back(std::move(it->reply), std::move(*done));
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [reply, response] : answers) reply(std::move(response));
}

std::optional<v1::ControlResponse> ApiHandler::settle(const Waiting& w, bool expired) {
  v1::ControlResponse response;
  response.set_request_id(w.request_id);
  v1::ErrorCode code = v1::OK;
  const std::string id = NodeState::endpoint_id(w.container_id, w.ifname);
  auto info = state_.check(w.container_id, w.ifname, &code);
  if (!info) {
    response.set_code(v1::NOT_FOUND);
    response.set_error("endpoint " + id + " was detached while its attach waited for the dataplane");
    return response;
  }
  if (info->dataplane() == v1::DP_CARRIED) {
    *response.mutable_endpoint() = *info;
    return response;
  }
  const bool refused = info->dataplane() == v1::DP_REFUSED;
  if (!refused && !expired) return std::nullopt;
  // A pod that cannot forward is not attached: vxfedd forgets it before it says so.
  v1::ErrorCode ignored = v1::OK;
  (void)state_.detach(w.container_id, w.ifname, &ignored);
  if (refused) {
    response.set_code(v1::DATAPLANE_REFUSED);
    response.set_error("the dataplane refused endpoint " + id + " (host interface " + info->spec().host_iface() +
                       "): " + info->dataplane_error());
  } else {
    ++counters_.attach_wait_timeouts;
    response.set_code(v1::UNAVAILABLE);
    response.set_error("the dataplane did not take endpoint " + id + " within " + std::to_string(w.wait_ms) + " ms (" +
                       (info->dataplane() == v1::DP_NOT_CONNECTED ? info->dataplane_error()
                                                                        : std::string("sent, not acknowledged yet")) +
                       "); it was detached again");
  }
  return response;
}

void ApiHandler::finish(v1::ControlResponse& response, const std::string& op,
                        std::chrono::steady_clock::time_point started) {
  const auto index = static_cast<std::size_t>(response.code());
  if (index < std::size(counters_.by_code)) ++counters_.by_code[index];
  if (response.code() != v1::OK) ++counters_.errors;
  auto& figures = counters_.by_op[op];
  if (index < std::size(figures.by_code)) ++figures.by_code[index];
  figures.latency.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

v1::ControlResponse ApiHandler::answer(const v1::ControlRequest& request) {
  v1::ControlResponse response;
  response.set_request_id(request.request_id());
  v1::ErrorCode code = v1::OK;
  ++counters_.requests;
  switch (request.op_case()) {
    case v1::ControlRequest::kAttachEndpoint: {
      ++counters_.attaches;
      auto r = state_.attach(request.attach_endpoint().endpoint(), &code);
      if (fill(response, r, code)) *response.mutable_endpoint() = *r;
      break;
    }
    case v1::ControlRequest::kDetachEndpoint: {
      ++counters_.detaches;
      auto r = state_.detach(request.detach_endpoint().container_id(), request.detach_endpoint().ifname(), &code);
      if (!r) {
        response.set_code(code == v1::OK ? v1::INTERNAL : code);
        response.set_error(r.error());
      }
      break;
    }
    case v1::ControlRequest::kCheckEndpoint: {
      auto r = state_.check(request.check_endpoint().container_id(), request.check_endpoint().ifname(), &code);
      if (fill(response, r, code)) *response.mutable_endpoint() = *r;
      break;
    }
    case v1::ControlRequest::kGetNetwork: {
      auto r = state_.get_network(request.get_network().name(), &code);
      if (fill(response, r, code)) *response.mutable_network() = *r;
      break;
    }
    case v1::ControlRequest::kAddNetwork: {
      auto r = state_.add_network(network_config_from_spec(request.add_network().spec()), /*from_config=*/false, &code);
      if (fill(response, r, code)) *response.mutable_network() = *r;
      break;
    }
    case v1::ControlRequest::kRemoveNetwork: {
      auto r = state_.remove_network(request.remove_network().name(), &code);
      if (!r) {
        response.set_code(code == v1::OK ? v1::INTERNAL : code);
        response.set_error(r.error());
      }
      break;
    }
    case v1::ControlRequest::kGetStatus: {
      auto* status = response.mutable_status();
      if (view_.status) *status = view_.status();
      status->set_networks(static_cast<std::uint32_t>(state_.network_count()));
      status->set_endpoints(static_cast<std::uint32_t>(state_.endpoint_count()));
      status->set_routes(static_cast<std::uint32_t>(state_.route_count()));
      break;
    }
    case v1::ControlRequest::kListNetworks:
      for (auto& n : state_.list_networks()) *response.mutable_networks()->add_networks() = std::move(n);
      response.mutable_networks();
      break;
    case v1::ControlRequest::kListVnis:
      response.mutable_vnis();
      for (auto& v : state_.list_vnis()) *response.mutable_vnis()->add_vnis() = std::move(v);
      break;
    case v1::ControlRequest::kListEndpoints:
      response.mutable_endpoints();
      for (auto& e : state_.list_endpoints()) *response.mutable_endpoints()->add_endpoints() = std::move(e);
      break;
    case v1::ControlRequest::kListRoutes:
      response.mutable_routes();
      for (auto& r : state_.list_routes()) *response.mutable_routes()->add_routes() = std::move(r);
      break;
    case v1::ControlRequest::kListPeers:
      response.mutable_peers();
      if (view_.peers)
        for (auto& p : view_.peers()) *response.mutable_peers()->add_peers() = std::move(p);
      break;
    case v1::ControlRequest::kGetStats:
      *response.mutable_stats() = view_.counters ? view_.counters() : dp::Counters();
      break;
    case v1::ControlRequest::kGarbageCollect: {
      auto r = state_.garbage_collect(request.garbage_collect(), &code);
      if (fill(response, r, code)) {
        auto* gc = response.mutable_gc();
        for (auto& spec : *r) *gc->add_removed() = std::move(spec);
      }
      break;
    }
    case v1::ControlRequest::kClaimBlock:  // asynchronous: handle(request, reply) only
      response.set_code(v1::INVALID_ARGUMENT);
      response.set_error("ClaimBlock needs an asynchronous reply");
      break;
    case v1::ControlRequest::OP_NOT_SET:
    default:
      response.set_code(v1::INVALID_ARGUMENT);
      response.set_error("unknown request: no operation this vxfedd understands (newer client?)");
      break;
  }
  return response;
}

}  // namespace vxfed::control
