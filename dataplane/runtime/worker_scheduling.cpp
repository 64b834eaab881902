#include "dataplane/runtime/worker_scheduling.hpp"

#include <pthread.h>
#include <sched.h>

#include <cstring>

namespace vxfed::dataplane {

std::string schedule_worker_thread(unsigned priority) {
  if (priority == 0) return {};
  sched_param param{};
  param.sched_priority = static_cast<int>(priority);
  const int rc = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &param);
  if (rc == 0) return {};
  return std::string("SCHED_FIFO priority ") + std::to_string(priority) + ": " + std::strerror(rc) +
         (rc == EPERM ? " (needs CAP_SYS_NICE or an RLIMIT_RTPRIO of at least the priority)" : "");
}

}  // namespace vxfed::dataplane
