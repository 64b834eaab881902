// Undo steps collected while ADD builds an attachment; run in reverse order unless the ADD
// completes and calls dismiss(). Each step logs its own failure: a rollback never stops half-way.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace vxfed::cni {

class Rollback {
 public:
  Rollback() = default;
  Rollback(const Rollback&) = delete;
  Rollback& operator=(const Rollback&) = delete;
  ~Rollback() { run(); }

  void push(std::string what, std::function<void()> undo) { steps_.emplace_back(std::move(what), std::move(undo)); }
  void dismiss() { steps_.clear(); }
  void run() {
    while (!steps_.empty()) {
      auto step = std::move(steps_.back());
      steps_.pop_back();
      step.second();
    }
  }

 private:
  std::vector<std::pair<std::string, std::function<void()>>> steps_;
};

}  // namespace vxfed::cni
