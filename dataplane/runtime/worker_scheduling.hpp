// How a worker thread is scheduled: real-time (SCHED_FIFO) or as an ordinary thread.
//
// On a busy node an ordinary worker queues behind whatever else is runnable when a packet
// wakes it: with two CPU-bound processes beside the latency suite, ours had a p99 of 1.7-3.3 ms
// while the kernel's VXLAN path, whose work runs in softirq ahead of any process, stayed under
// 0.3 ms (issue 35; docs/pod-ports.md, "A busy node"). A SCHED_FIFO worker preempts ordinary
// threads the moment its socket or event wakes it, as softirq does.
//
// The risk is the one softirq has too: a real-time thread that never sleeps starves the node.
// A worker never spins long (idle_backoff.hpp: 16 empty polls, then it blocks in poll() until
// a frame arrives), and the kernel's RT throttling (sched_rt_runtime_us, 950 ms of every second
// by default) bounds even a worker that is kept busy. What the DaemonSet must grant for it
// (CAP_SYS_NICE, Guaranteed pod with whole CPUs) is in docs/deploy.md.
#pragma once

#include <string>

namespace vxfed::dataplane {

// Makes the calling thread SCHED_FIFO at `priority` (1..99); 0 leaves it an ordinary thread.
// Returns "" on success (or for 0), else why not (EPERM: no CAP_SYS_NICE and no RLIMIT_RTPRIO
// room): the worker then runs on as an ordinary thread.
std::string schedule_worker_thread(unsigned priority);

}  // namespace vxfed::dataplane
