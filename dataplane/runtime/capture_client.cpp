#include "dataplane/runtime/capture_client.hpp"

#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

#include "common/delimited.hpp"
#include "dataplane/runtime/pcap_writer.hpp"
#include "proto/dataplane.pb.h"

namespace vxfed::dataplane {

namespace v1 = vxfed::dataplane::v1;

namespace {

volatile std::sig_atomic_t interrupted = 0;
void on_signal(int) { interrupted = 1; }

// Answers of a capture carry up to 8 MiB of packets (CaptureSession::kMaxAnswerBytes).
constexpr std::size_t kMaxAnswer = 64u << 20;

}  // namespace

int run_capture(int fd, const CaptureRequestOptions& o, int timeout_ms) {
  v1::DataplaneRequest request;
  std::uint64_t id = 1;
  request.set_request_id(id);
  auto* start = request.mutable_start_capture();
  start->set_port(o.port);
  start->set_max_packets(o.count);
  start->set_max_bytes(o.max_bytes);
  start->set_duration_ms(static_cast<std::uint32_t>(o.seconds * 1000));
  start->set_snaplen(o.snaplen);
  start->set_ring_kib(o.ring_kib);
  if (o.direction == "received") start->set_direction(v1::StartCapture::RECEIVED);
  else if (o.direction == "sent") start->set_direction(v1::StartCapture::SENT);
  else if (o.direction != "both") {
    std::cerr << "vxfed-dpctl: --direction: '" << o.direction << "' is not both, received or sent\n";
    return 2;
  }

  v1::DataplaneResponse response;
  const auto exchange = [&](v1::DataplaneRequest& rq) -> bool {
    if (auto st = write_delimited(fd, rq, timeout_ms); !st) {
      std::cerr << "vxfed-dpctl: send: " << st.error() << "\n";
      return false;
    }
    if (auto st = read_delimited(fd, response, timeout_ms, kMaxAnswer); !st) {
      std::cerr << "vxfed-dpctl: receive: " << st.error() << "\n";
      return false;
    }
    return true;
  };
  if (!exchange(request)) return 2;
  if (!response.ok()) {
    std::cerr << "vxfed-dpctl: capture refused: " << response.error() << "\n";
    return 1;
  }
  auto pcap = PcapWriter::open(o.out, response.capture().snaplen());
  if (!pcap) {
    std::cerr << "vxfed-dpctl: " << pcap.error() << "\n";
    // The capture runs on until its limits: stop it, nobody reads it.
    v1::DataplaneRequest stop;
    stop.set_request_id(++id);
    stop.mutable_stop_capture();
    exchange(stop);
    return 2;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::cerr << "vxfed-dpctl: capturing " << o.port << " (snaplen " << response.capture().snaplen()
            << "); Ctrl-C stops\n";

  const auto started = std::chrono::steady_clock::now();
  for (;;) {
    const v1::CaptureStatus& c = response.capture();
    for (const auto& p : c.packets_read()) {
      if (auto st = pcap->write(p.unix_ns(), p.original_length(), p.data()); !st) {
        std::cerr << "vxfed-dpctl: " << st.error() << "\n";
        interrupted = 1;
      }
    }
    (void)pcap->flush();
    if (!c.active() && !c.more()) break;
    if (!c.more()) std::this_thread::sleep_for(std::chrono::milliseconds(o.interval_ms));
    v1::DataplaneRequest next;
    next.set_request_id(++id);
    if (interrupted) next.mutable_stop_capture();
    else next.mutable_read_capture();
    if (!exchange(next)) return 2;
    if (!response.ok()) {
      std::cerr << "vxfed-dpctl: capture: " << response.error() << "\n";
      return 1;
    }
  }
  const v1::CaptureStatus& c = response.capture();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cerr << "vxfed-dpctl: " << c.packets() << " packets (" << c.bytes() << " bytes) of " << c.port()
            << " in " << secs << " s; ended: " << c.ended();
  if (c.ring_full() != 0) std::cerr << "; " << c.ring_full() << " not kept (ring full: raise --ring-kib)";
  std::cerr << "\n";
  return 0;
}

}  // namespace vxfed::dataplane
