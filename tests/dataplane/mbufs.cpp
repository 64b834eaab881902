#include "tests/dataplane/mbufs.hpp"

#include <cstring>
#include <stdexcept>

namespace vxfed::test {

rte_mempool* small_pool() {
  static rte_mempool* p = rte_pktmbuf_pool_create("test_small", 8191, 256, 0,
                                                  RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  return p;
}

rte_mempool* jumbo_pool() {
  static rte_mempool* p = rte_pktmbuf_pool_create("test_jumbo", 511, 32, 0,
                                                  9216 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
  return p;
}

rte_mbuf* make_mbuf(const Bytes& bytes, rte_mempool* pool, std::uint32_t seg_size) {
  rte_mbuf* head = rte_pktmbuf_alloc(pool);
  if (!head) return nullptr;
  const std::uint32_t room = rte_pktmbuf_tailroom(head);
  const std::uint32_t per = seg_size ? std::min(seg_size, room) : room;
  if (!seg_size && bytes.size() > room) throw std::length_error("frame larger than one segment");
  std::size_t off = 0;
  rte_mbuf* seg = head;
  for (;;) {
    const std::size_t n = std::min<std::size_t>(per, bytes.size() - off);
    char* dst = rte_pktmbuf_append(seg, static_cast<std::uint16_t>(n));
    if (n) std::memcpy(dst, bytes.data() + off, n);
    if (seg != head) {
      if (rte_pktmbuf_chain(head, seg) != 0) {
        rte_pktmbuf_free(seg);
        rte_pktmbuf_free(head);
        return nullptr;
      }
    }
    off += n;
    if (off >= bytes.size()) break;
    seg = rte_pktmbuf_alloc(pool);
    if (!seg) {
      rte_pktmbuf_free(head);
      return nullptr;
    }
  }
  return head;
}

Bytes read_mbuf(const rte_mbuf* m) {
  Bytes out;
  out.reserve(rte_pktmbuf_pkt_len(m));
  for (const rte_mbuf* s = m; s; s = s->next) {
    const auto* p = rte_pktmbuf_mtod(s, const std::uint8_t*);
    out.insert(out.end(), p, p + rte_pktmbuf_data_len(s));
  }
  return out;
}

}  // namespace vxfed::test
