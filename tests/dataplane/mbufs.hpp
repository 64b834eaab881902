// Synthetic mbufs for packet tests and benchmarks: frames from bytes (one segment or a chain
// of segments of a given size), and bytes back from (possibly chained) mbufs.
#pragma once

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cstdint>

#include "tests/dataplane/frames.hpp"

namespace vxfed::test {

// Pools created once per process (EAL required): 2 KiB segments, and 9 KiB single segments.
rte_mempool* small_pool();
rte_mempool* jumbo_pool();

// nullptr if the pool is empty. seg_size 0: one segment (the pool's room must suffice).
rte_mbuf* make_mbuf(const Bytes& bytes, rte_mempool* pool, std::uint32_t seg_size = 0);
Bytes read_mbuf(const rte_mbuf* m);

}  // namespace vxfed::test
