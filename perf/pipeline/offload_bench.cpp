// Offload benchmark: what a sender pays to finish a pod's super-packet in software, no I/O.
// A DPDK port here is configured without TX offloads, so a pod's TCP super-packet leaving for
// the uplink (VXLAN-encapsulated by the pod burst, its inner checksum pending) is cut into
// segments by finish_offloads (dataplane/core/mbuf_offload.hpp): per segment the headers
// written, the payload copied and the inner TCP checksum computed. Also the checksum sum
// alone (OnesSum::add over one contiguous buffer), the part the copy does not explain.
//
//   build/perf/pipeline/vxfed-offload-bench [--mss 8898] [--segments 7] [--runs 21]
//
// Per run: the median cycles of --iterations calls; across runs: median, min, max. Prints
// cycles per super-packet, bytes per cycle and the Gbit/s of payload one core would finish.
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_mbuf.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "dataplane/core/mbuf_offload.hpp"
#include "dataplane/core/segment.hpp"
#include "perf/common/bench_node.hpp"

namespace dp = vxfed::dataplane;

namespace {

constexpr std::uint32_t kOuter = 14 + 20 + 8 + 8;   // outer Ethernet, IPv4, UDP, VXLAN
constexpr std::uint32_t kInner = 14 + 20 + 32;      // inner Ethernet, IPv4, TCP with timestamps

struct Spread {
  double median, min, max;
};
Spread spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

void put16(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}

// The super-packet as the pod burst hands it to a DPDK uplink: headers in the first mbuf,
// the payload filling the chain's mbufs, TX flags for a pending inner TCP checksum and
// segmentation behind VXLAN.
rte_mbuf* make_super_packet(rte_mempool* pool, std::uint32_t mss, std::uint32_t segments) {
  const std::uint32_t payload = mss * segments;
  const std::uint32_t total = kOuter + kInner + payload;
  std::vector<std::uint8_t> b(total);
  for (std::uint32_t i = 0; i < total; ++i) b[i] = static_cast<std::uint8_t>(i * 131 + 7);
  std::uint8_t* ip = b.data() + 14;
  ip[0] = 0x45, put16(ip + 2, total - 14), ip[8] = 64, ip[9] = 17;
  std::uint8_t* inner_ip = b.data() + kOuter + 14;
  inner_ip[0] = 0x45, put16(inner_ip + 2, total - kOuter - 14), inner_ip[8] = 64, inner_ip[9] = 6;
  std::uint8_t* tcp = inner_ip + 20;
  tcp[12] = 8 << 4;  // data offset: 32 bytes
  tcp[13] = 0x10;    // ACK

  rte_mbuf* head = nullptr;
  rte_mbuf* prev = nullptr;
  for (std::uint32_t at = 0; at < total;) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool);
    if (m == nullptr) return nullptr;
    const std::uint32_t take = std::min<std::uint32_t>(total - at, rte_pktmbuf_tailroom(m));
    std::memcpy(rte_pktmbuf_append(m, static_cast<std::uint16_t>(take)), b.data() + at, take);
    at += take;
    if (head == nullptr) {
      head = m;
    } else {
      prev->next = m;
      head->nb_segs++;
      head->pkt_len += take;
    }
    prev = m;
  }
  head->ol_flags = RTE_MBUF_F_TX_TCP_CKSUM | RTE_MBUF_F_TX_TCP_SEG | RTE_MBUF_F_TX_IPV4 |
                   RTE_MBUF_F_TX_TUNNEL_VXLAN | RTE_MBUF_F_TX_OUTER_IPV4;
  head->outer_l2_len = dp::kOuterL2Len;
  head->outer_l3_len = dp::kOuterL3Len;
  head->l2_len = dp::kTunnelL2Len;
  head->l3_len = 20;
  head->l4_len = 32;
  head->tso_segsz = static_cast<std::uint16_t>(mss);
  return head;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vxfed offload benchmark: software segmentation and checksums of a pod's super-packet, no I/O"};
  std::uint32_t mss = 8898, segments = 7, iterations = 2000;
  int runs = 21;
  app.add_option("--mss", mss, "payload bytes per segment (8898: TCP over an 8950-byte pod MTU)")
      ->check(CLI::Range(64u, 9000u));
  app.add_option("--segments", segments, "segments per super-packet")->check(CLI::Range(2u, 44u));
  app.add_option("--iterations", iterations, "calls per run")->check(CLI::Range(10u, 1000000u));
  app.add_option("--runs", runs, "runs (median, min, max reported)")->check(CLI::Range(1, 1001));
  CLI11_PARSE(app, argc, argv);
  if (static_cast<std::uint64_t>(mss) * segments + kOuter + kInner > 65535) {
    std::fprintf(stderr, "--mss x --segments makes a super-packet over 64 KiB\n");
    return 2;
  }

  if (!vxfed::bench::init_eal("vxfed-offload-bench", 512)) return 1;
  rte_mempool* pool = rte_pktmbuf_pool_create("offload_bench", 1024, 256, 0, 9216 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
  rte_mbuf* super = pool ? make_super_packet(pool, mss, segments) : nullptr;
  if (super == nullptr) {
    std::fprintf(stderr, "mempool: out of EAL memory\n");
    return 1;
  }
  const std::uint32_t payload = mss * segments;
  const double hz = static_cast<double>(rte_get_tsc_hz());

  // finish_offloads frees the super-packet it cut: one more reference per call keeps it.
  std::vector<double> finish_runs, sum_runs;
  std::vector<rte_mbuf*> out(segments);
  std::vector<std::uint64_t> samples(iterations);
  for (int r = 0; r < runs; ++r) {
    for (std::uint32_t i = 0; i < iterations; ++i) {
      for (rte_mbuf* s = super; s != nullptr; s = s->next) rte_mbuf_refcnt_update(s, 1);
      bool alloc_failed = false;
      const std::uint64_t t0 = rte_rdtsc_precise();
      const unsigned n = dp::finish_offloads(super, pool, out.data(), segments, &alloc_failed);
      const std::uint64_t t1 = rte_rdtsc_precise();
      if (n != segments) {
        std::fprintf(stderr, "finish_offloads made %u segments, not %u%s\n", n, segments,
                     alloc_failed ? " (mbufs ran out)" : "");
        return 1;
      }
      rte_pktmbuf_free_bulk(out.data(), n);
      samples[i] = t1 - t0;
    }
    std::nth_element(samples.begin(), samples.begin() + iterations / 2, samples.end());
    finish_runs.push_back(static_cast<double>(samples[iterations / 2]));

    // The sum alone over the same number of bytes, contiguous (the first segment's data room).
    const auto* bytes = rte_pktmbuf_mtod(super, const std::uint8_t*);
    const std::uint32_t len = super->data_len;
    std::uint32_t sink = 0;
    for (std::uint32_t i = 0; i < iterations; ++i) {
      const std::uint64_t t0 = rte_rdtsc_precise();
      for (std::uint32_t done = 0; done < payload; done += len) {
        dp::OnesSum s;
        s.add(bytes, std::min(len, payload - done));
        sink += s.folded();
      }
      samples[i] = rte_rdtsc_precise() - t0;
    }
    if (sink == 0x12345678) std::printf(" ");  // keeps the sums from being optimized away
    std::nth_element(samples.begin(), samples.begin() + iterations / 2, samples.end());
    sum_runs.push_back(static_cast<double>(samples[iterations / 2]));
  }
  const Spread f = spread(finish_runs), s = spread(sum_runs);
  std::printf("super-packet: %u segments of %u payload bytes behind VXLAN (%u bytes), %d runs x %u calls\n",
              segments, mss, super->pkt_len, runs, iterations);
  std::printf("%-34s %10s %10s %10s %9s %12s\n", "", "cycles", "min", "max", "B/cycle", "Gbit/s/core");
  std::printf("%-34s %10.0f %10.0f %10.0f %9.2f %12.1f\n", "finish_offloads (segment+copy+sum)", f.median, f.min,
              f.max, payload / f.median, payload * 8.0 * hz / f.median / 1e9);
  std::printf("%-34s %10.0f %10.0f %10.0f %9.2f %12.1f\n", "OnesSum::add alone, same bytes", s.median, s.min, s.max,
              payload / s.median, payload * 8.0 * hz / s.median / 1e9);
  rte_pktmbuf_free(super);
  rte_eal_cleanup();
  return 0;
}
