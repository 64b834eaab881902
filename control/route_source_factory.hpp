// Builds the route sources the config asks for. Static routes live in the config's networks
// and are handled by NodeState itself; this adds the BGP adapter (bgp/) when `bgp.enabled`.
#pragma once

#include <memory>
#include <vector>

#include <utility>  // before asio: boost 1.74 awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include <spdlog/logger.h>

#include "control/daemon_config.hpp"
#include "control/node_state.hpp"
#include "control/route_source.hpp"

namespace vxfed::control {

Result<std::vector<std::unique_ptr<RouteSource>>> make_route_sources(boost::asio::io_context& io, const Config& config,
                                                                     NodeState& state,
                                                                     std::shared_ptr<spdlog::logger> log);

}  // namespace vxfed::control
